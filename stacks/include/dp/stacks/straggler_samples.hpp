// The straggler watch's look at a rank (issue 55): its main thread's state
// and system call and its process's CPU time, from /proc/PID/stat and
// /proc/PID/syscall: two short reads of files kept open, none of the
// process's memory, so a node agent can look at every rank ten times a
// second. The counts travel
// with the agent's heartbeats; the daemon turns them into wait shares for
// the verdict (dp/straggler.hpp).
//
// What a look counts (the same for every program and every Python):
//  - waiting: the main thread waits in a collective, for its peers. Every
//    PyTorch collective's wait ends asleep in futex (Work.wait, DDP's
//    backward waiting for its buckets, libdp's ops), and so do other waits
//    on a lock or a condition (a data loader's pin-memory queue): where the
//    rank's frames are read (the node agent reads them now and then,
//    wait_kind), a futex wait counts as waiting only when the frames show a
//    collective; without frames, every futex wait does;
//  - own: the main thread waits on its own work, not on its peers: its
//    input pipeline, a file read, a sleep, anything else (wait_kind says
//    which);
//  - running: on a CPU or runnable (R): computing, or wanting to;
//  - none: stopped (a suspended job), traced, exiting: no look at all.
// A rank that waits by spinning (NCCL's GPU waits) looks running: the CPU
// view cannot tell it from work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dp/stacks/stacks.hpp"
#include "dp/unique_fd.hpp"

namespace dp::stacks {

// The kernel's word alone: futex (waiting), on a CPU (running), any other
// sleep (elsewhere), or no look.
enum class Look { waiting, running, elsewhere, none };
Look classify_look(char state, int syscall);

// What a rank's main thread waits on: in a collective, for its peers; or on
// its own work: its input pipeline, a file read, a sleep, or anything else
// (a queue, a lock, a socket).
enum class WaitKind { collective, input, file, sleep, other };
const char* wait_kind_name(WaitKind k) noexcept;  // "collective", "input", "file", "sleep", "other"

// From the main thread's frames (innermost first; empty where none were
// read), the call its innermost frame makes, and the syscall it sleeps in.
// The innermost frame that is torch's own decides: its DataLoader
// (torch/utils/data/) is input; torch.distributed, DDP (torch/nn/parallel/)
// and autograd's backward (DDP syncs gradients there) are a collective. Then
// the call: a `.wait()` the program makes of a C function (a Work's, a
// Future's: threading's waits have Python frames) or one named like a
// collective is a collective; time.sleep is a sleep. Then the syscall:
// (clock_)nanosleep a sleep, read/pread64/readv/preadv/openat/statx a file
// read, and futex without frames a collective (every collective's wait ends
// there); anything else is other.
WaitKind wait_kind(const std::vector<Frame>& frames, const std::string& call, int syscall);

struct ProcessLook {
  char state = '?';                    // the main thread's
  int syscall = -2;                    // kernel_view.hpp's numbers: kNotInSyscall, kSyscallUnknown
  unsigned long long cpu_ticks = 0;    // the whole process's utime + stime
  unsigned long long start_ticks = 0;  // with the pid, the process
  // The main thread's context switches so far (LookFiles::look_closely); none: not read.
  std::optional<unsigned long long> switches = std::nullopt;
};

// A frames read made between two close looks tells what the main thread
// waits on in `after`'s syscall only when the thread slept through it:
// asleep at both, in the same syscall, and never woken between. Under load
// a read can come tens of ms after the look: a rank that has left its
// collective's futex for its sleep would have its sleep's frames taken for
// its futex's word, and its waits counted as its own (issue 68).
bool slept_through(const ProcessLook& before, const ProcessLook& after);
// A process's two files, opened once from its /proc/PID directory and read
// again at each look (a pread each): bound to that process, never to a pid
// reused after it.
class LookFiles {
 public:
  explicit LookFiles(int proc_dir);
  explicit operator bool() const { return stat_ && syscall_; }
  // None when the process is gone.
  std::optional<ProcessLook> look() const;
  // A look with the main thread's context switches (a third, longer file):
  // around a frames read only.
  std::optional<ProcessLook> look_closely() const;

 private:
  UniqueFd stat_, syscall_, status_;
};

// One rank's looks so far, cumulative (what the heartbeat carries).
struct LookCounts {
  uint64_t looks = 0, waiting = 0, running = 0;
  uint64_t input = 0, file = 0, sleep = 0, other = 0;  // waits on its own work, by kind
  uint64_t futex = 0;                // asleep in futex, whatever the frames said: the kernel's word
  unsigned long long cpu_ticks = 0;  // at the last look
  // One look; `frames_say`: what the rank's frames, read a moment ago, said
  // its main thread waits on (none: the kernel's word alone).
  void add(const ProcessLook& l, std::optional<WaitKind> frames_say = std::nullopt);
  uint64_t own() const { return input + file + sleep + other; }
};

// Where a read (read_process) saw the rank wait in a collective, for the
// verdict's line: its main thread asleep, its frames saying a collective
// (wait_kind): what the innermost frame calls (else its function) and the
// innermost frame of the program's own files, not a library's
// ("Variable._execution_engine.run_backward at ddp.py:118"). Empty when it
// was not waiting in one or no frames were read.
std::string wait_site(const ProcessStacks& p);

}  // namespace dp::stacks
