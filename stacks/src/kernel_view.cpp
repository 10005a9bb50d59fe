#include "dp/stacks/kernel_view.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <memory>
#include <utility>

#include "dp/bounded_read.hpp"
#include "dp/proc_stat.hpp"
#include "dp/unique_fd.hpp"

namespace dp::stacks {
namespace {

struct SyscallName {
  int nr;
  const char* name;
};

// The calls a thread that waits usually sits in; numbers from the kernel's
// syscall tables (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; arm64 uses
// the generic table, include/uapi/asm-generic/unistd.h).
#if defined(__x86_64__)
constexpr SyscallName kSyscalls[] = {
    {0, "read"},
    {1, "write"},
    {7, "poll"},
    {16, "ioctl"},
    {17, "pread64"},
    {18, "pwrite64"},
    {19, "readv"},
    {20, "writev"},
    {23, "select"},
    {24, "sched_yield"},
    {34, "pause"},
    {35, "nanosleep"},
    {42, "connect"},
    {43, "accept"},
    {44, "sendto"},
    {45, "recvfrom"},
    {46, "sendmsg"},
    {47, "recvmsg"},
    {61, "wait4"},
    {74, "fsync"},
    {75, "fdatasync"},
    {128, "rt_sigtimedwait"},
    {130, "rt_sigsuspend"},
    {202, "futex"},
    {230, "clock_nanosleep"},
    {232, "epoll_wait"},
    {247, "waitid"},
    {257, "openat"},
    {270, "pselect6"},
    {271, "ppoll"},
    {281, "epoll_pwait"},
    {288, "accept4"},
    {299, "recvmmsg"},
    {307, "sendmmsg"},
    {441, "epoll_pwait2"},
};
#elif defined(__aarch64__)
constexpr SyscallName kSyscalls[] = {
    {22, "epoll_pwait"},
    {29, "ioctl"},
    {56, "openat"},
    {63, "read"},
    {64, "write"},
    {65, "readv"},
    {66, "writev"},
    {67, "pread64"},
    {68, "pwrite64"},
    {72, "pselect6"},
    {73, "ppoll"},
    {82, "fsync"},
    {83, "fdatasync"},
    {95, "waitid"},
    {98, "futex"},
    {101, "nanosleep"},
    {115, "clock_nanosleep"},
    {124, "sched_yield"},
    {133, "rt_sigsuspend"},
    {137, "rt_sigtimedwait"},
    {202, "accept"},
    {203, "connect"},
    {206, "sendto"},
    {207, "recvfrom"},
    {211, "sendmsg"},
    {212, "recvmsg"},
    {242, "accept4"},
    {243, "recvmmsg"},
    {260, "wait4"},
    {269, "sendmmsg"},
    {441, "epoll_pwait2"},
};
#else
constexpr SyscallName kSyscalls[] = {{-3, ""}};
#endif

const char* state_word(char state) {
  switch (state) {
    case 'R': return "running";
    case 'S': return "sleeping";
    case 'D': return "disk sleep";
    case 'T': return "stopped";
    case 't': return "traced";
    case 'Z': return "zombie";
    case 'X': return "dead";
    case 'I': return "idle";
    default: return "in state ?";
  }
}

template <class T>
bool number(std::string_view s, T& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

constexpr size_t kSmallFileBytes = 512;  // wchan, syscall: one short line

}  // namespace

std::optional<TaskStat> parse_task_stat(std::string_view text) {
  const auto split = split_proc_stat(text);
  if (!split) return std::nullopt;
  const auto& f = split->fields;  // f[0] is field 3, the state
  TaskStat s;
  unsigned long long utime = 0, stime = 0;
  if (f.size() < 20 || f[0].size() != 1 || !number(f[11], utime) || !number(f[12], stime) ||
      !number(f[19], s.start_ticks)) {
    return std::nullopt;
  }
  // Fields 26-28 and 45-51 (f[23..25], f[42..48]); a kernel that lacks them leaves zeros.
  size_t mark = 0;
  for (size_t i : {23, 24, 25, 42, 43, 44, 45, 46, 47, 48}) {
    if (i < f.size() && !number(f[i], s.image_marks[mark])) s.image_marks[mark] = 0;
    ++mark;
  }
  s.name = std::string(split->command);
  s.state = f[0][0];
  s.cpu_ticks = utime + stime;
  return s;
}

int parse_syscall(std::string_view text) {
  const std::string_view first = text.substr(0, text.find_first_of(" \n"));
  if (first == "running") return kNotInSyscall;
  int nr = 0;
  if (!number(first, nr) || nr < kNotInSyscall) return kSyscallUnknown;
  return nr;
}

std::optional<unsigned long long> parse_context_switches(std::string_view status) {
  unsigned long long sum = 0;
  for (std::string_view key : {"\nvoluntary_ctxt_switches:", "\nnonvoluntary_ctxt_switches:"}) {
    const size_t at = status.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view v = status.substr(at + key.size());
    v = v.substr(0, v.find('\n'));
    while (!v.empty() && (v.front() == '\t' || v.front() == ' ')) v.remove_prefix(1);
    unsigned long long n = 0;
    if (!number(v, n)) return std::nullopt;
    sum += n;
  }
  return sum;
}

std::string syscall_name(int nr) {
  for (const auto& s : kSyscalls) {
    if (s.nr == nr) return s.name;
  }
  return "syscall " + std::to_string(nr);
}

std::string describe_kernel_thread(const KernelThread& t) {
  std::string s = state_word(t.state);
  if (t.syscall >= 0) s += " in " + syscall_name(t.syscall);
  if (!t.wchan.empty()) s += " (" + t.wchan + ")";
  return s;
}

std::vector<KernelThread> read_kernel_threads(int proc_dir, size_t max_threads) {
  std::vector<KernelThread> out;
  UniqueDir dir(UniqueFd(::openat(proc_dir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)));
  if (!dir) return out;
  const int task_fd = dir.fd();
  while (const dirent* e = dir.next()) {
    if (out.size() == max_threads) break;
    int tid = 0;
    if (!number(std::string_view(e->d_name), tid)) continue;
    const std::string at = std::string(e->d_name) + "/";
    auto stat = parse_task_stat(read_bounded_at(task_fd, (at + "stat").c_str(), kStatFileBytes));
    if (!stat) continue;  // it ended meanwhile
    KernelThread t{tid, std::move(stat->name), stat->state, stat->cpu_ticks, {}, kSyscallUnknown};
    t.wchan = read_bounded_at(task_fd, (at + "wchan").c_str(), kSmallFileBytes);
    while (!t.wchan.empty() && (t.wchan.back() == '\n' || t.wchan.back() == ' '))
      t.wchan.pop_back();
    if (t.wchan == "0") t.wchan.clear();  // not sleeping, or not ours to see
    t.syscall = parse_syscall(read_bounded_at(task_fd, (at + "syscall").c_str(), kSmallFileBytes));
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tid < b.tid; });
  return out;
}

}  // namespace dp::stacks
