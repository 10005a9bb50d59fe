// A CPython process made of bytes, for the walk's tests, the fuzz target and
// the bench: _PyRuntime, interpreter and thread states, frames, code
// objects, str and bytes objects, each where the version's layout says.
// 3.13 and 3.14 images publish their own (small) offsets in the real
// _Py_DebugOffsets layout (debug_offsets.hpp's table), as a real process
// publishes its own; 3.8 to 3.12 images use that version's real layout
// (python_layout.hpp), its frame model (PyFrameObject chains, _PyCFrame),
// its line table format, Py_Version (3.11, 3.12) or the minor version its
// file's API tells (3.8-3.10), and libc's struct pthread for 3.8-3.10's
// thread ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dp/stacks/python_layout.hpp"
#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/runtime_address.hpp"

namespace dp::stacks::image {

// Bytes that stand at `base` in a process; reads outside them fail.
class MemoryImage final : public RemoteMemory {
 public:
  MemoryImage(uint64_t base, std::vector<std::byte> bytes)
      : base_(base), bytes_(std::move(bytes)) {}
  bool read(uint64_t address, std::span<std::byte> out) override;
  void put(uint64_t address, std::span<const std::byte> data);
  void put_u64(uint64_t address, uint64_t value);
  void put_u8(uint64_t address, uint8_t value);
  uint64_t base() const { return base_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  uint64_t base_;
  std::vector<std::byte> bytes_;
};

struct SyntheticFrame {
  std::string function, file;
  int first_line = 1;  // co_firstlineno
  int line = 1;        // where the frame is
  bool ucs2 = false;   // its file name stored as a 2-byte-per-character string
};

struct SyntheticThread {
  int tid = 0;
  std::vector<SyntheticFrame> frames;  // innermost first
};

// The struct offsets a 3.13 or 3.14 image publishes (the values its debug offsets hold).
struct ImageOffsets {
  static constexpr uint64_t interp_size = 64, interp_next = 0, threads_head = 8;
  static constexpr uint64_t thread_size = 64, thread_next = 8, current_frame = 16, tid = 24;
  static constexpr uint64_t frame_size = 0x50, frame_previous = 8, frame_executable = 0,
                            frame_instr_ptr = 0x38, frame_owner = 0x46;
  static constexpr uint64_t code_size = 0xd0, code_filename = 0x70, code_qualname = 0x80,
                            code_linetable = 0x88, code_firstlineno = 0x44, code_adaptive = 0xc8;
  static constexpr uint64_t ob_type = 8, type_size = 32, tp_name = 24;
  static constexpr uint64_t bytes_ob_size = 0x10, bytes_ob_sval = 0x20;
  static constexpr uint64_t unicode_length = 0x10, unicode_state = 0x20, unicode_ascii_size = 0x28;
};

// Where libc keeps a thread's kernel tid in an image's struct pthread (glibc's place).
inline constexpr uint64_t kImagePthreadTid = 0x2d0;

struct SyntheticPython {
  MemoryImage image{0, {}};
  PythonProcess process;  // what the walk starts from; pid: the first thread's tid
  PythonLayout layout;    // the offsets the image's objects sit at
  uint64_t runtime = 0;   // where _PyRuntime starts
  uint64_t interpreter = 0;
  std::vector<uint64_t> thread_states;        // in the order given
  std::vector<uint64_t> pthreads;             // 3.8-3.10: each thread's struct pthread
  std::vector<std::vector<uint64_t>> frames;  // each thread's frame addresses, innermost first
  // Each thread's C-stack entry frame, last in its chain (3.12+; 0 where the version has none).
  std::vector<uint64_t> entry_frames;
};

// `minor`: 8 to 14. Threads are listed newest first in the interpreter, as
// CPython does, so the first given is the oldest (the main thread). A 3.14
// image tags every other frame's f_executable, as deferred references are.
SyntheticPython build_synthetic_python(unsigned minor, const std::vector<SyntheticThread>& threads,
                                       uint64_t base = 0x7f3a00000000);

// CPython's location table entry of kind "no columns" (13): `units` code
// units (1-8) whose line is the previous entry's plus `line_delta`.
std::vector<uint8_t> line_entry_no_columns(unsigned units, int line_delta);

}  // namespace dp::stacks::image
