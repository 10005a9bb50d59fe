// A process as /proc tells it, read the same way by root (the plugin, at a
// task's fork), the node agent (its tasks and a launcher's workers) and the
// lease folder: the one parser of /proc/PID/stat, and the one way to pin a
// process by pidfd so that a reused pid is never taken for it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dp/unique_fd.hpp"

namespace dp::agent {

struct ProcStat {
  char state = '?';
  int ppid = 0;                        // field 4
  unsigned long long start_ticks = 0;  // field 22
  std::optional<int> exit_code;        // field 52 (a wait status); absent before Linux 3.5
};
// /proc/PID/stat's text; the command (field 2) may hold spaces and ')'.
std::optional<ProcStat> parse_proc_stat(std::string_view text);
// At most `max` bytes of a file (/proc files have no size); empty if unreadable.
std::string read_bounded(const std::string& path, size_t max);
std::optional<ProcStat> read_proc_stat(int pid);
// The start time (field 22): with the pid, it names one process.
std::optional<unsigned long long> read_start_ticks(int pid);
// A pidfd (close-on-exec) of `pid` if it is still the process that started
// at `start_ticks`, else none: read after the pidfd pins it, so no reuse slips in.
UniqueFd pin_process(int pid, unsigned long long start_ticks);

}  // namespace dp::agent
