// A CPython process made of bytes, for the walk's tests (and the fuzz target
// and bench still to come): _PyRuntime with the real 3.13 or 3.14 _Py_DebugOffsets layout
// (debug_offsets.hpp's table) at its start, interpreter and thread states,
// frames, code objects, str and bytes objects, each where the offsets it
// publishes say. The offsets are the image's own (small structs, so a whole
// process fits in a few KiB), as a real process's are its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dp/stacks/remote_memory.hpp"

namespace dp::stacks::image {

// Bytes that stand at `base` in a process; reads outside them fail.
class MemoryImage final : public RemoteMemory {
 public:
  MemoryImage(uint64_t base, std::vector<std::byte> bytes)
      : base_(base), bytes_(std::move(bytes)) {}
  bool read(uint64_t address, std::span<std::byte> out) override;
  void put(uint64_t address, std::span<const std::byte> data);
  void put_u64(uint64_t address, uint64_t value);
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

// The image's own struct offsets (the values its debug offsets publish).
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

struct SyntheticPython {
  MemoryImage image{0, {}};
  uint64_t runtime = 0;  // where _PyRuntime starts
  uint64_t interpreter = 0;
  std::vector<uint64_t> thread_states;        // in the order given
  std::vector<std::vector<uint64_t>> frames;  // each thread's frame addresses, innermost first
  std::vector<uint64_t> entry_frames;  // each thread's C-stack entry frame, last in its chain
};

// `minor`: 13 or 14. Threads are listed newest first in the interpreter, as
// CPython does, so the first given is the oldest (the main thread). A 3.14
// image tags every other frame's f_executable, as deferred references are.
SyntheticPython build_synthetic_python(unsigned minor, const std::vector<SyntheticThread>& threads,
                                       uint64_t base = 0x7f3a00000000);

// CPython's location table entry of kind "no columns" (13): `units` code
// units (1-8) whose line is the previous entry's plus `line_delta`.
std::vector<uint8_t> line_entry_no_columns(unsigned units, int line_delta);

}  // namespace dp::stacks::image
