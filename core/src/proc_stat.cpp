#include "dp/proc_stat.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "dp/bounded_read.hpp"
#include "dp/params.hpp"
#include "dp/unique_fd.hpp"

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

namespace {

constexpr size_t kChildrenBytes = 64 * 1024;  // a few thousand pids: far above a rank's tree

// The children of every thread of `pid`, from the kernel's lists; nullopt
// where it keeps none (CONFIG_PROC_CHILDREN off) or `pid` is gone.
std::optional<std::vector<int>> children_of(int pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  UniqueDir threads(task.c_str());
  if (!threads) return std::nullopt;
  std::vector<int> out;
  bool any = false;
  while (const dirent* e = threads.next()) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string path = task + "/" + e->d_name + "/children";
    if (::access(path.c_str(), R_OK) != 0) continue;
    any = true;
    const std::string text = read_bounded(path, kChildrenBytes);
    for (size_t at = 0; at < text.size();) {
      const size_t end = std::min(text.find(' ', at), text.size());
      if (auto child = parse_whole_number(text.substr(at, end - at), 1, INT32_MAX))
        out.push_back(static_cast<int>(*child));
      at = end + 1;
    }
  }
  if (!any) return std::nullopt;
  return out;
}

// Every process's parent, from one pass over /proc.
std::vector<std::pair<int, int>> parents() {
  std::vector<std::pair<int, int>> out;
  UniqueDir proc("/proc");
  while (const dirent* e = proc ? proc.next() : nullptr) {
    auto pid = parse_whole_number(e->d_name, 1, INT32_MAX);
    if (!pid) continue;
    if (auto st = read_proc_stat(static_cast<int>(*pid)))
      out.emplace_back(static_cast<int>(*pid), st->ppid);
  }
  return out;
}

}  // namespace

std::vector<int> descendants(int pid, size_t max) {
  std::vector<int> out;
  std::set<int> seen;
  std::optional<std::vector<std::pair<int, int>>> all;  // read once, where needed
  auto add_children_of = [&](int of) {
    auto kids = children_of(of);
    if (!kids) {
      if (!all) all = parents();
      kids.emplace();
      for (const auto& [p, pp] : *all)
        if (pp == of) kids->push_back(p);
    }
    for (int k : *kids)
      if (out.size() < max && seen.insert(k).second) out.push_back(k);
  };
  add_children_of(pid);
  for (size_t i = 0; i < out.size(); ++i) add_children_of(out[i]);
  return out;
}

size_t signal_descendants(int pid, int sig) {
  size_t n = 0;
  for (int d : descendants(pid)) n += ::kill(d, sig) == 0 ? 1 : 0;
  return n;
}

size_t kill_descendants(int pid) {
  constexpr int kRounds = 256;
  size_t killed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const auto tree = descendants(pid);
    size_t alive = 0;
    for (int d : tree) {
      const auto st = read_proc_stat(d);
      if (!st || st->state == 'Z' || st->state == 'X') continue;
      ++alive;
      ::kill(d, SIGSTOP);
    }
    if (alive == 0) break;
    for (int d : tree) killed += ::kill(d, SIGKILL) == 0 ? 1 : 0;
  }
  return killed;
}

}  // namespace dp
