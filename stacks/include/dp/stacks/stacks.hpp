// What a reader learns of one process: every thread's Python frames (CPython
// 3.8 to 3.14), every thread's state as the kernel tells it, and when there
// are no Python frames, a named reason. Plain values:
// the node agent fills them, the daemon merges them, tests record them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dp::stacks {

struct Frame {
  std::string function;  // co_qualname: "Trainer.step", "<module>"
  std::string file;      // co_filename as the process has it
  int line = -1;         // -1: the location table did not say
  bool operator==(const Frame&) const = default;
};

// Where an instruction's source is (PEP 657): lines from 1, columns in
// UTF-8 bytes from 0, the end column one past the last byte. Before 3.11 a
// code object knows only lines: both columns are kNoColumn, the whole line.
inline constexpr int kNoColumn = -1;
struct SourceSpan {
  int line = 0, end_line = 0, column = 0, end_column = 0;
  bool operator==(const SourceSpan&) const = default;
};

// Why a process shows no Python frames: a name a verdict can test and a
// sentence the merged view prints.
enum class NoPython {
  not_allowed,         // the caller's policy refused it; its memory was not read
  gone,                // it exited, or its pid now names another process
  unreadable,          // the kernel refused the read (not dumpable, no ptrace access)
  not_python,          // no python executable or libpython is mapped
  no_runtime,          // a Python whose _PyRuntime was not found (no symbol, no section)
  unsupported_python,  // a version this reader does not know (before 3.8, or newer)
  debug_build,         // a debug build (python3.X-dbg) before 3.13: other object layouts
  free_threaded,       // a free-threaded build: its frames are not read yet
  inconsistent,        // what was read does not hold together (garbage, or changed while read)
  over_budget,         // the bytes or reads one process may take were spent
  over_time,           // the deadline passed
};
const char* no_python_name(NoPython why);

struct NoStacks {
  NoPython why;
  std::string detail;  // a sentence: what was found and why it stops there
};

inline constexpr int kNotInSyscall = -1;    // running in user space, or blocked outside a syscall
inline constexpr int kSyscallUnknown = -2;  // /proc/PID/task/TID/syscall was not readable

// One thread as /proc/PID/task/TID tells it to the process's own user.
struct KernelThread {
  int tid = 0;
  std::string name;                  // comm: "python3", "pt_main_thread", "gloo"
  char state = '?';                  // R S D T t Z ...
  unsigned long long cpu_ticks = 0;  // utime + stime, in clock ticks
  std::string wchan;                 // where in the kernel it sleeps; empty when unknown
  int syscall = kSyscallUnknown;     // the syscall it is in, kNotInSyscall, or unknown
};

struct ThreadStack {
  int tid = 0;
  std::vector<Frame> frames;  // innermost first; empty for a thread without Python frames
  bool truncated = false;     // frames stop early: the frame limit, or a chain that broke
  std::optional<KernelThread> kernel;
  // The innermost frame's instruction (the walk sets it where its line is
  // known): the source span name_calls reads `call` from.
  std::optional<SourceSpan> innermost_at;
  // What the innermost frame calls, as its source names it ("time.sleep"):
  // a C function has no frame of its own. Empty when not known.
  std::string call;
};

struct ProcessStacks {
  int pid = 0;
  std::string python;  // "3.13.5" (3.8-3.10: "3.9", no patch) once its layout was found
  std::optional<NoStacks> no_python;
  // Python threads first (the main thread, whose tid is the pid, first of
  // all), then threads the kernel lists that have no Python thread state.
  std::vector<ThreadStack> threads;
  // utime + stime of the whole process (every thread, also those that
  // ended), in clock ticks: a hang watch's sign that a rank computes.
  unsigned long long cpu_ticks = 0;
  uint64_t bytes_read = 0;  // of the process's memory
  uint64_t reads = 0;
};

}  // namespace dp::stacks
