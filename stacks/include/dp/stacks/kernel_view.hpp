// The kernel's view of a process's threads, for every program: also one
// without Python frames (native, a Python without debug offsets) and one
// whose memory cannot be read. From /proc/PID/task/TID/{stat,wchan,syscall},
// every file read bounded; the parsers are pure.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// More than any /proc/PID/stat line (under 1 KiB), whatever the command's name.
inline constexpr size_t kStatFileBytes = 4096;
// More than any /proc/PID/status (about 1.5 KiB; its CPU and group lists grow
// with the machine).
inline constexpr size_t kStatusFileBytes = 16384;

struct TaskStat {
  std::string name;  // field 2, the command; it may hold spaces and ')'
  char state = '?';
  unsigned long long cpu_ticks = 0;    // fields 14 + 15
  unsigned long long start_ticks = 0;  // field 22
  // Where the kernel placed the address space's code, stack, arguments and
  // environment (fields 26-28, 45-51): an exec places them anew (and, with
  // address randomization, elsewhere), so they tell one program image of a
  // pid from the next. All zero where the kernel hides them (a process this
  // user may not trace) or lacks them.
  std::array<unsigned long long, 10> image_marks{};
};
std::optional<TaskStat> parse_task_stat(std::string_view text);

// /proc/.../syscall: "NR args... sp pc" in a syscall, "-1 sp pc" blocked
// outside one, "running" on a CPU; kSyscallUnknown when unreadable.
int parse_syscall(std::string_view text);

// /proc/PID/status's voluntary_ctxt_switches + nonvoluntary_ctxt_switches:
// the main thread's own (not its process's). Unchanged between two reads,
// the thread never woke between them. None when either line is missing.
std::optional<unsigned long long> parse_context_switches(std::string_view status);

// The syscall's name on this machine's architecture for the calls a stuck
// thread usually sits in (futex, poll, read, nanosleep, ...), else "syscall N".
std::string syscall_name(int nr);

// "sleeping in futex (futex_wait_queue)", "running", "disk sleep in read (nfs_...)".
std::string describe_kernel_thread(const KernelThread& t);

// The threads (at most `max_threads`, sorted by tid) of the process whose
// /proc/PID folder `proc_dir` is open.
std::vector<KernelThread> read_kernel_threads(int proc_dir, size_t max_threads);

}  // namespace dp::stacks
