// Where one CPython version keeps what the walk follows: the offsets of the
// fields from _PyRuntime to every thread's frames, and the few ways versions
// differ in shape. 3.13 and later publish their offsets (_Py_DebugOffsets,
// debug_offsets.hpp) and the walk takes the process's own; 3.8 to 3.12
// publish none, so their offsets come from a table of four layouts
// (python_layouts.cpp), keyed by the minor version: no patch release of
// them moved a field the walk reads.
#pragma once

#include <cstdint>

namespace dp::stacks {

// How a thread state leads to its frames, and what a frame is.
enum class FrameModel {
  frame_object,  // 3.8-3.10: PyThreadState.frame, a chain of PyFrameObject (f_back)
  cframe,        // 3.11, 3.12: PyThreadState.cframe->current_frame, _PyInterpreterFrame
  direct,        // 3.13+: PyThreadState.current_frame, _PyInterpreterFrame
};

// How a code object maps an instruction to its line.
enum class LineFormat {
  lnotab,     // 3.8, 3.9: co_lnotab, (bytecode bytes, line) increments; f_lasti in bytes
  pairs,      // 3.10: co_linetable, (bytes, line) pairs, -128 no line; f_lasti in code units
  locations,  // 3.11+: co_linetable's location entries (PEP 657), with columns
};

// Where a thread state keeps its kernel thread id.
enum class ThreadId {
  native,   // 3.11+: native_thread_id
  pthread,  // 3.8-3.10: thread_id, a pthread_t: the kernel tid sits in libc's struct pthread
};

struct PythonLayout {
  uint64_t version = 0;  // PY_VERSION_HEX; 3.8-3.10 know only 0x03MM0000 (no patch)
  FrameModel frames = FrameModel::direct;
  LineFormat lines = LineFormat::locations;
  ThreadId thread_id = ThreadId::native;
  bool qualname = true;  // code.qualname is co_qualname (3.11+), else co_name
  // _PyInterpreterFrame.owner: at most owner_max, and from first_skipped_owner
  // up an entry or shim frame of the C stack, not a Python function's.
  int owner_max = 0, first_skipped_owner = 0;
  struct {
    uint64_t size, interpreters_head;
  } runtime{};
  struct {
    uint64_t size, next, threads_head;
  } interp{};
  // current_frame: the frame (direct), the PyFrameObject (frame_object) or
  // the _PyCFrame pointer (cframe), whose own current_frame is at cframe_frame.
  struct {
    uint64_t size, next, current_frame, native_thread_id, cframe_frame;
  } thread{};
  // executable: f_code (f_executable on 3.13+); instr_ptr: prev_instr or
  // instr_ptr, a pointer into code_adaptive, or f_lasti, an int (frame_object).
  struct {
    uint64_t size, previous, executable, instr_ptr, owner;
  } frame{};
  struct {
    uint64_t size, filename, qualname, linetable, firstlineno, code_adaptive;
  } code{};
  struct {
    uint64_t ob_type;
  } object{};
  struct {
    uint64_t size, tp_name;
  } type{};
  struct {
    uint64_t ob_size, ob_sval;
  } bytes{};
  // compact_extra: how much longer PyCompactUnicodeObject is than PyASCIIObject.
  struct {
    uint64_t state, length, ascii_size, compact_extra;
  } unicode{};
};

// The layout of a CPython 3.8 to 3.12 release of this minor version
// (x86-64 and aarch64, GIL builds, no Py_DEBUG); nullptr for any other. Its
// version is the first minor version the layout holds for (3.8 for 3.9).
const PythonLayout* layout_before_debug_offsets(unsigned minor);

// The earliest and latest minor versions the tables know.
inline constexpr unsigned kOldestMinor = 8, kNewestTabledMinor = 12;

}  // namespace dp::stacks
