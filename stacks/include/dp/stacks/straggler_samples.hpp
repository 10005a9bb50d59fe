// The straggler watch's look at a rank (issue 55): its main thread's state
// and system call and its process's CPU time, from /proc/PID/stat and
// /proc/PID/syscall: two short reads of files kept open, none of the
// process's memory, so a node agent can look at every rank ten times a
// second. The counts travel
// with the agent's heartbeats; the daemon turns them into wait shares for
// the verdict (dp/straggler.hpp).
//
// What a look counts (the same for every program and every Python):
//  - waiting: the main thread asleep in futex. Every PyTorch collective's
//    wait ends there (Work.wait, DDP's backward waiting for its buckets,
//    libdp's ops), and so do other waits on a lock or a condition (a data
//    loader's pin-memory queue, the GIL): such a rank looks like a waiter;
//  - running: on a CPU or runnable (R): computing, or wanting to;
//  - elsewhere: asleep in anything else (time.sleep, a read from disk or a
//    socket, poll): neither waiting for peers nor computing;
//  - none: stopped (a suspended job), traced, exiting: no look at all.
// A rank that waits by spinning (NCCL's GPU waits) looks running: the CPU
// view cannot tell it from work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "dp/stacks/stacks.hpp"
#include "dp/unique_fd.hpp"

namespace dp::stacks {

enum class Look { waiting, running, elsewhere, none };
Look classify_look(char state, int syscall);

struct ProcessLook {
  char state = '?';                    // the main thread's
  int syscall = -2;                    // kernel_view.hpp's numbers: kNotInSyscall, kSyscallUnknown
  unsigned long long cpu_ticks = 0;    // the whole process's utime + stime
  unsigned long long start_ticks = 0;  // with the pid, the process
};
// A process's two files, opened once from its /proc/PID directory and read
// again at each look (a pread each): bound to that process, never to a pid
// reused after it.
class LookFiles {
 public:
  explicit LookFiles(int proc_dir);
  explicit operator bool() const { return stat_ && syscall_; }
  // None when the process is gone.
  std::optional<ProcessLook> look() const;

 private:
  UniqueFd stat_, syscall_;
};

// One rank's looks so far, cumulative (what the heartbeat carries).
struct LookCounts {
  uint64_t looks = 0, waiting = 0, running = 0;
  unsigned long long cpu_ticks = 0;  // at the last look
  void add(const ProcessLook& l);
};

// Where a read (read_process) saw the rank wait, for the verdict's line:
// its main thread asleep in futex, with Python frames (3.13+): what the
// innermost frame calls (else its function) and the innermost frame of the
// program's own files, not a library's ("Variable._execution_engine.run_backward
// at ddp.py:118"). Empty when it was not waiting or no frames were read.
std::string wait_site(const ProcessStacks& p);

}  // namespace dp::stacks
