#include "dp/stacks/straggler_samples.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <string_view>

#include "dp/shown_value.hpp"
#include "dp/stacks/kernel_view.hpp"
#include "dp/stacks/merge.hpp"

namespace dp::stacks {

Look classify_look(char state, int syscall) {
  switch (state) {
    case 'R': return Look::running;
    case 'S':
    case 'D':
      return syscall >= 0 && syscall_name(syscall) == "futex" ? Look::waiting : Look::elsewhere;
    default: return Look::none;  // T t Z X: stopped, traced, exiting
  }
}

namespace {

UniqueFd open_in(int dir, const char* name) {
  return UniqueFd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
}

// The file's text from its start: /proc regenerates it at offset 0.
std::string_view reread(const UniqueFd& fd, char* buf, size_t size) {
  const ssize_t n = ::pread(fd.get(), buf, size, 0);
  return n > 0 ? std::string_view(buf, static_cast<size_t>(n)) : std::string_view();
}

// A library's file, not the program's: the standard library, installed
// packages, the interpreter's frozen modules.
bool library_file(const std::string& f) {
  return f.empty() || f[0] == '<' || f.find("/site-packages/") != std::string::npos ||
         f.find("/dist-packages/") != std::string::npos ||
         f.find("/lib/python3") != std::string::npos;
}

}  // namespace

LookFiles::LookFiles(int proc_dir)
    : stat_(open_in(proc_dir, "stat")), syscall_(open_in(proc_dir, "syscall")) {}

std::optional<ProcessLook> LookFiles::look() const {
  char buf[kStatFileBytes];
  const auto stat = parse_task_stat(reread(stat_, buf, sizeof buf));
  if (!stat) return std::nullopt;
  ProcessLook l{stat->state, kSyscallUnknown, stat->cpu_ticks, stat->start_ticks};
  // "running" while on a CPU; a thread asleep says its call.
  if (l.state != 'R') l.syscall = parse_syscall(reread(syscall_, buf, 512));
  return l;
}

std::string wait_site(const ProcessStacks& p) {
  const ThreadStack* main = nullptr;
  for (const auto& t : p.threads)
    if (t.tid == p.pid) main = &t;
  if (!main || main->frames.empty() || !main->kernel ||
      classify_look(main->kernel->state, main->kernel->syscall) != Look::waiting)
    return "";
  const Frame& inner = main->frames.front();
  const Frame* own = &inner;
  for (const auto& f : main->frames) {
    if (library_file(f.file)) continue;
    own = &f;
    break;
  }
  // A rank's own text (its names, its source's call), shown escaped as the merge shows it.
  return shown_name(main->call.empty() ? inner.function : main->call, kShownNameBytes) + " at " +
         frame_place(*own);
}

void LookCounts::add(const ProcessLook& l) {
  cpu_ticks = l.cpu_ticks;
  const Look k = classify_look(l.state, l.syscall);
  if (k == Look::none) return;
  ++looks;
  waiting += k == Look::waiting ? 1 : 0;
  running += k == Look::running ? 1 : 0;
}

}  // namespace dp::stacks
