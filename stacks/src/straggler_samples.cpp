#include "dp/stacks/straggler_samples.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <initializer_list>
#include <set>
#include <string_view>

#include "dp/shown_value.hpp"
#include "dp/stacks/call_site.hpp"
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

bool has(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The C functions of torch.distributed a program may call itself.
bool collective_name(std::string_view name) {
  static const std::set<std::string_view> kNames = {"all_reduce",
                                                    "broadcast",
                                                    "barrier",
                                                    "all_gather",
                                                    "all_gather_into_tensor",
                                                    "reduce_scatter",
                                                    "reduce_scatter_tensor",
                                                    "all_to_all",
                                                    "all_to_all_single",
                                                    "reduce",
                                                    "gather",
                                                    "scatter",
                                                    "send",
                                                    "recv",
                                                    "monitored_barrier",
                                                    "allreduce",
                                                    "allgather",
                                                    "run_backward"};
  return kNames.count(name) != 0;
}

std::optional<WaitKind> torch_frame(const std::string& file) {
  if (has(file, "/torch/utils/data/")) return WaitKind::input;
  if (has(file, "/torch/distributed/") || has(file, "/torch/nn/parallel/") ||
      has(file, "/torch/autograd/"))
    return WaitKind::collective;
  return std::nullopt;
}

bool syscall_is(int syscall, std::initializer_list<std::string_view> names) {
  if (syscall < 0) return false;
  const std::string name = syscall_name(syscall);
  for (std::string_view n : names)
    if (name == n) return true;
  return false;
}

}  // namespace

const char* wait_kind_name(WaitKind k) noexcept {
  switch (k) {
    case WaitKind::collective: return "collective";
    case WaitKind::input: return "input";
    case WaitKind::file: return "file";
    case WaitKind::sleep: return "sleep";
    case WaitKind::other: return "other";
  }
  return "?";
}

WaitKind wait_kind(const std::vector<Frame>& frames, const std::string& call, int syscall) {
  for (const auto& f : frames)
    if (auto k = torch_frame(f.file)) return *k;
  const std::string_view last = std::string_view(call).substr(call.rfind('.') + 1);
  if (!frames.empty() && !call.empty()) {
    // A wait of a C function called from the program's own line: torch's.
    if (collective_name(last) || (last == "wait" && !library_file(frames.front().file)))
      return WaitKind::collective;
    if (call == "time.sleep") return WaitKind::sleep;
  }
  if (syscall_is(syscall, {"clock_nanosleep", "nanosleep"})) return WaitKind::sleep;
  if (syscall_is(syscall, {"read", "pread64", "readv", "preadv", "preadv2", "openat", "statx"}))
    return WaitKind::file;
  if (frames.empty() && syscall_is(syscall, {"futex"})) return WaitKind::collective;
  return WaitKind::other;
}

LookFiles::LookFiles(int proc_dir)
    : stat_(open_in(proc_dir, "stat")),
      syscall_(open_in(proc_dir, "syscall")),
      status_(open_in(proc_dir, "status")) {}

std::optional<ProcessLook> LookFiles::look() const {
  char buf[kStatFileBytes];
  const auto stat = parse_task_stat(reread(stat_, buf, sizeof buf));
  if (!stat) return std::nullopt;
  ProcessLook l{stat->state, kSyscallUnknown, stat->cpu_ticks, stat->start_ticks};
  // "running" while on a CPU; a thread asleep says its call.
  if (l.state != 'R') l.syscall = parse_syscall(reread(syscall_, buf, 512));
  return l;
}

std::optional<ProcessLook> LookFiles::look_closely() const {
  auto l = look();
  if (!l) return l;
  char buf[kStatusFileBytes];
  l->switches = parse_context_switches(reread(status_, buf, sizeof buf));
  return l;
}

bool slept_through(const ProcessLook& before, const ProcessLook& after) {
  const Look k = classify_look(after.state, after.syscall);
  return (k == Look::waiting || k == Look::elsewhere) && before.syscall == after.syscall &&
         before.start_ticks == after.start_ticks && before.switches && after.switches &&
         *before.switches == *after.switches && classify_look(before.state, before.syscall) == k;
}

std::string wait_site(const ProcessStacks& p) {
  const ThreadStack* main = nullptr;
  for (const auto& t : p.threads)
    if (t.tid == p.pid) main = &t;
  if (!main || main->frames.empty() || !main->kernel ||
      classify_look(main->kernel->state, main->kernel->syscall) == Look::running ||
      classify_look(main->kernel->state, main->kernel->syscall) == Look::none ||
      wait_kind(main->frames, main->call, main->kernel->syscall) != WaitKind::collective)
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

void LookCounts::add(const ProcessLook& l, std::optional<WaitKind> frames_say) {
  cpu_ticks = l.cpu_ticks;
  const Look k = classify_look(l.state, l.syscall);
  if (k == Look::none) return;
  ++looks;
  if (k == Look::running) {
    ++running;
    return;
  }
  futex += k == Look::waiting ? 1 : 0;
  switch (frames_say.value_or(wait_kind({}, "", l.syscall))) {
    case WaitKind::collective: ++waiting; break;
    case WaitKind::input: ++input; break;
    case WaitKind::file: ++file; break;
    case WaitKind::sleep: ++sleep; break;
    case WaitKind::other: ++other; break;
  }
}

}  // namespace dp::stacks
