#include "proc_stat.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "dp/bounded_read.hpp"
#include "dp/params.hpp"
#include "dp/unique_fd.hpp"

namespace dp::agent {

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> f;  // f[0] is field 3, the state
  for (size_t at = close + 1; at < text.size();) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    const size_t end = text.find_first_of(" \n", at);
    if (at < text.size()) f.push_back(text.substr(at, end - at));
    at = end == std::string_view::npos ? text.size() : end;
  }
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

std::string read_bounded(const std::string& path, size_t max) {
  return read_bounded_at(AT_FDCWD, path.c_str(), max);
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

}  // namespace dp::agent
