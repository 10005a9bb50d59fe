#include "launcher_workers.hpp"

#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dp/bounded_read.hpp"
#include "dp/list_text.hpp"
#include "dp/params.hpp"

namespace dp::agent {
namespace {

// An environment under Slurm often exceeds 8 KiB, and RANK may sit anywhere in it.
constexpr size_t kMaxEnvironBytes = 64 * 1024;
constexpr int kMaxDepth = 2;  // the task's children, and a shell's children under it

std::string proc(int pid, const char* what) { return "/proc/" + std::to_string(pid) + "/" + what; }

std::optional<int> small_number(std::string_view v) {
  auto n = parse_whole_number(v, -1, INT32_MAX);
  if (!n) return std::nullopt;
  return static_cast<int>(*n);
}

constexpr size_t kMaxThreads = 4096;             // a launcher's threads read for children
constexpr size_t kMaxChildrenBytes = 64 * 1024;  // one thread's children file

// Linux 6.15 and later keep a process's wait status with its pidfd after
// the reap (ioctl PIDFD_GET_INFO, PIDFD_INFO_EXIT): a launcher that reaps
// at once (torchrun 2.x polls every 0.1 s) then no longer hides how its
// worker ended. The kernel's struct pidfd_info, first version (64 bytes);
// C libraries up to Debian 13's do not define it yet. Older kernels refuse
// the ioctl (ENOTTY) and the zombie read above is all there is.
struct PidfdInfo {
  uint64_t mask, cgroupid;
  uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  int32_t exit_code;
};
static_assert(sizeof(PidfdInfo) == 64);
constexpr uint64_t kPidfdInfoExit = uint64_t{1} << 3;
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

void add_child(Children& kids, int parent, int pid) {
  if (auto st = read_proc_stat(pid); st && st->ppid == parent) kids[parent].emplace_back(pid, *st);
}

// The children of `pid` from its threads' children files (whichever thread
// forked a child lists it).
void listed_children(int pid, Children& kids) {
  UniqueDir d(proc(pid, "task").c_str());
  size_t threads = 0;
  while (const dirent* e = d ? d.next() : nullptr) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' || ++threads > kMaxThreads) continue;
    const std::string text =
        read_bounded(proc(pid, "task/") + e->d_name + "/children", kMaxChildrenBytes);
    for (std::string_view item : list_items(text, ' '))  // "123 456 "
      if (auto child = small_number(item)) add_child(kids, pid, *child);
  }
}

// Every process of this user by its parent, from one pass over /proc
// (workers run as the job's user, as the agent does).
Children own_processes_by_parent() {
  Children kids;
  for (int pid : processes_of(::geteuid(), SIZE_MAX))
    if (auto st = read_proc_stat(pid)) kids[st->ppid].emplace_back(pid, *st);
  return kids;
}

}  // namespace

std::optional<int> reaped_status(int pidfd) {
  PidfdInfo info{};
  info.mask = kPidfdInfoExit;
  if (::ioctl(pidfd, kPidfdGetInfo, &info) != 0 || (info.mask & kPidfdInfoExit) == 0)
    return std::nullopt;
  return info.exit_code;
}

ChildList child_list_here() {
  static const ChildList here = ::access("/proc/thread-self/children", R_OK) == 0
                                    ? ChildList::thread_files
                                    : ChildList::proc_scan;
  return here;
}

Children children_under(const std::vector<int>& roots, int depth, ChildList how) {
  if (how == ChildList::proc_scan) return own_processes_by_parent();
  Children kids;
  std::vector<int> level = roots;
  for (int d = 0; d < depth && !level.empty(); ++d) {
    std::vector<int> next;
    for (int pid : level) {
      listed_children(pid, kids);
      for (const auto& [child, st] : kids[pid]) next.push_back(child);
    }
    level = std::move(next);
  }
  return kids;
}

std::optional<WorkerEnv> parse_worker_environ(std::string_view environ) {
  WorkerEnv w;
  std::optional<int> restart, max_restarts, rank;
  std::vector<std::string_view> parts;
  while (!environ.empty()) {
    const size_t nul = environ.find('\0');
    const std::string_view var = environ.substr(0, nul);
    environ = nul == std::string_view::npos ? std::string_view() : environ.substr(nul + 1);
    const size_t eq = var.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = var.substr(0, eq), value = var.substr(eq + 1);
    if (key == "RANK" || key == "LOCAL_RANK" || key.rfind("TORCHELASTIC_", 0) == 0)
      parts.push_back(var);
    if (key == "RANK") rank = small_number(value);
    else if (key == "LOCAL_RANK") w.local_rank = small_number(value).value_or(-1);
    else if (key == "TORCHELASTIC_RESTART_COUNT") restart = small_number(value);
    else if (key == "TORCHELASTIC_MAX_RESTARTS") max_restarts = small_number(value);
  }
  if (!restart || !rank || *rank < 0) return std::nullopt;
  // In a fixed order: a shell may pass on what it inherited in another.
  std::sort(parts.begin(), parts.end());
  for (auto part : parts) (w.assignment += part) += '\n';
  w.rank = *rank;
  w.restart_count = *restart;
  w.max_restarts = max_restarts.value_or(0);
  return w;
}

LauncherWorkers::LauncherWorkers(ChildList how)
    : how_(how), epoll_(::epoll_create1(EPOLL_CLOEXEC)) {}

void LauncherWorkers::watch(const TaskStart& task) { tasks_[task.rank] = task; }

void LauncherWorkers::forget(int task_rank) {
  tasks_.erase(task_rank);
  std::vector<int> gone;
  for (const auto& [pid, w] : workers_)
    if (w.task_rank == task_rank) gone.push_back(pid);
  for (int pid : gone) drop(pid);
}

size_t LauncherWorkers::count(int task_rank) const {
  size_t n = 0;
  for (const auto& [pid, w] : workers_) n += w.task_rank == task_rank;
  return n;
}

void LauncherWorkers::scan() {
  if (!epoll_ || tasks_.empty()) return;
  seen_.clear();
  std::vector<int> roots;
  for (const auto& [rank, t] : tasks_) roots.push_back(t.pid);
  const auto kids = children_under(roots, kMaxDepth, how_);
  size_t budget = kMaxProcsPerScan;
  for (const auto& [rank, t] : tasks_) {
    // Its pid names the task only while it started when the task did.
    if (read_start_ticks(t.pid) != t.start_ticks) continue;
    consider(rank, t.pid, kids, 0, budget);
  }
  // Ended workers no longer listed were reaped: their pids may come back as others.
  for (auto it = ended_.begin(); it != ended_.end();)
    it = seen_.count(*it) ? std::next(it) : ended_.erase(it);
}

// The children of `parent` that are workers; a child that is not (a shell
// that forked the launcher) is searched in turn, down to kMaxDepth.
void LauncherWorkers::consider(int task_rank, int parent, const Children& kids, int depth,
                               size_t& budget) {
  auto it = kids.find(parent);
  if (it == kids.end() || depth >= kMaxDepth) return;
  std::optional<std::optional<WorkerEnv>> parent_env;  // read once, when a child needs it
  for (const auto& [pid, st] : it->second) {
    if (budget == 0) return;
    --budget;
    const Proc p{pid, st.start_ticks};
    seen_.insert(p);
    auto known = workers_.find(pid);
    if (known != workers_.end() && known->second.start_ticks == st.start_ticks) continue;
    if (known != workers_.end()) drop(pid);  // an ended worker's pid, reused
    if (ended_.count(p)) continue;
    // Read again on each scan: a child forked but not yet exec'd still has its parent's.
    auto env = parse_worker_environ(read_bounded(proc(pid, "environ"), kMaxEnvironBytes));
    if (env && !parent_env)
      parent_env = parse_worker_environ(read_bounded(proc(parent, "environ"), kMaxEnvironBytes));
    if (!env || !env->set_by(*parent_env)) {
      consider(task_rank, pid, kids, depth + 1, budget);
    } else if (count(task_rank) < kMaxWorkersPerTask) {
      add(task_rank, pid, st.start_ticks, *env);
    }
  }
}

void LauncherWorkers::add(int task_rank, int pid, unsigned long long start, const WorkerEnv& env) {
  UniqueFd fd = pin_process(pid, start);
  if (!fd) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = pid;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) return;
  workers_[pid] = Worker{task_rank, start, env, std::move(fd)};
}

void LauncherWorkers::drop(int pid) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.pidfd.get(), nullptr);
  workers_.erase(it);
}

std::vector<TaskStart> LauncherWorkers::running() const {
  std::vector<TaskStart> out;
  for (const auto& [pid, w] : workers_)
    if (!ended_.count({pid, w.start_ticks})) out.push_back({w.env.rank, pid, w.start_ticks});
  return out;
}

std::vector<WorkerEnd> LauncherWorkers::ended() {
  std::vector<WorkerEnd> out;
  epoll_event evs[64];
  int n = 0;
  while (epoll_ && (n = ::epoll_wait(epoll_.get(), evs, 64, 0)) > 0) {
    for (int i = 0; i < n; ++i) {
      const int pid = evs[i].data.fd;
      auto it = workers_.find(pid);
      if (it == workers_.end()) continue;
      const int task_rank = it->second.task_rank;
      const unsigned long long start_ticks = it->second.start_ticks;
      const WorkerEnv env = it->second.env;
      // Still the zombie of that worker (not reaped, the pid not reused), or
      // reaped on a kernel whose pidfd keeps the status: how it ended.
      std::optional<int> status;
      if (const auto st = read_proc_stat(pid);
          st && st->start_ticks == start_ticks && st->state == 'Z' && st->exit_code)
        status = *st->exit_code;
      else status = reaped_status(it->second.pidfd.get());
      drop(pid);
      ended_.insert({pid, start_ticks});
      if (!status) continue;
      const bool clean = WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
      if (!clean && !env.will_restart()) out.push_back({task_rank, env.rank, *status});
    }
  }
  return out;
}

}  // namespace dp::agent
