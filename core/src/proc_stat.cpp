#include "dp/proc_stat.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "dp/bounded_read.hpp"
#include "dp/params.hpp"

namespace dp {

std::optional<ProcStatText> split_proc_stat(std::string_view text) {
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcStatText s{text.substr(open + 1, close - open - 1), {}};
  for (size_t at = close + 1; at < text.size();) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    const size_t end = std::min(text.find_first_of(" \n", at), text.size());
    if (end > at) s.fields.push_back(text.substr(at, end - at));
    at = end;
  }
  return s;
}

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  const auto split = split_proc_stat(text);
  if (!split) return std::nullopt;
  const auto& f = split->fields;  // f[0] is field 3, the state
  if (f.size() < 20 || f[0].size() != 1) return std::nullopt;
  ProcStat s;
  s.state = f[0][0];
  auto ppid = parse_whole_number(f[1], 0, INT32_MAX);
  if (!ppid) return std::nullopt;
  s.ppid = static_cast<int>(*ppid);
  auto start = parse_whole_number_u64(f[19], 0, UINT64_MAX);
  if (!start) return std::nullopt;
  s.start_ticks = *start;
  if (f.size() >= 50) {
    auto code = parse_whole_number(f[49], 0, 0xffff);
    if (!code) return std::nullopt;
    s.exit_code = static_cast<int>(*code);
  }
  return s;
}

std::optional<ProcStat> read_proc_stat(int pid) {
  constexpr size_t kMaxStatBytes = 4096;  // a stat line is under 1 KiB
  return parse_proc_stat(read_bounded("/proc/" + std::to_string(pid) + "/stat", kMaxStatBytes));
}

std::optional<unsigned long long> read_start_ticks(int pid) {
  auto st = read_proc_stat(pid);
  if (!st) return std::nullopt;
  return st->start_ticks;
}

UniqueFd pin_process(int pid, unsigned long long start_ticks) {
  // pidfd_open sets close-on-exec itself.
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (fd && read_start_ticks(pid) != start_ticks) fd.reset();
  return fd;
}

std::vector<int> processes_of(uid_t uid, size_t max) {
  std::vector<int> out;
  UniqueDir proc("/proc");
  while (proc && out.size() < max) {
    const dirent* e = proc.next();
    if (!e) break;
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    struct stat owner {};
    if (::fstatat(proc.fd(), e->d_name, &owner, 0) != 0 || owner.st_uid != uid) continue;
    if (auto pid = parse_whole_number(e->d_name, 1, INT32_MAX))
      out.push_back(static_cast<int>(*pid));
  }
  return out;
}

}  // namespace dp
