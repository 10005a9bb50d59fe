// A process as /proc tells it, read the same way by root (the plugin, at a
// task's fork, and the lease folder), the node agent (its tasks, a
// launcher's workers, a store client) and the stack reader's threads: the
// one parser of /proc/PID/stat, the one pass over the user's processes, and
// the one way to pin a process by pidfd so that a reused pid is never taken
// for it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "dp/unique_fd.hpp"

namespace dp {

// /proc/PID/stat (and /proc/PID/task/TID/stat) split into the command and
// the fields after it. The command sits between the first '(' and the last
// ')' and may hold spaces and ')'; none without both.
struct ProcStatText {
  std::string_view command;              // field 2, without its parentheses
  std::vector<std::string_view> fields;  // fields[0] is field 3, the state
};
std::optional<ProcStatText> split_proc_stat(std::string_view text);

struct ProcStat {
  char state = '?';
  int ppid = 0;                        // field 4
  unsigned long long start_ticks = 0;  // field 22
  std::optional<int> exit_code;        // field 52 (a wait status); absent before Linux 3.5
};
// /proc/PID/stat's text, fields read by number.
std::optional<ProcStat> parse_proc_stat(std::string_view text);
std::optional<ProcStat> read_proc_stat(int pid);
// The start time (field 22): with the pid, it names one process.
std::optional<unsigned long long> read_start_ticks(int pid);
// A pidfd (close-on-exec) of `pid` if it is still the process that started
// at `start_ticks`, else none: read after the pidfd pins it, so no reuse slips in.
UniqueFd pin_process(int pid, unsigned long long start_ticks);

// The pids of /proc whose directory `uid` owns, in /proc's order, at most
// `max`: one pass, a stat each (no file of another user's is read).
std::vector<int> processes_of(uid_t uid, size_t max);

// The processes below `pid` (its children, theirs, ...), parents before
// children, at most `max`: each thread's /proc/PID/task/TID/children (the
// kernel's own list), else, where the kernel keeps none, every process's
// parent from one pass over /proc. A process that has exited and not been
// reaped (a zombie) is listed too: it is ended once its parent reaps it.
std::vector<int> descendants(int pid, size_t max = 1 << 16);

// `sig` to each of `pid`'s descendants; how many it reached.
size_t signal_descendants(int pid, int sig);

// Ends every descendant of `pid` for good, also those that fork while it
// does: each is stopped first (a stopped process forks no more), then
// killed, the list read again until it holds only zombies or the rounds
// (a few hundred) are spent. The caller, their subreaper, reaps what comes
// back to it. Returns how many it killed.
size_t kill_descendants(int pid);

}  // namespace dp
