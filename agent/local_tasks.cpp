#include "local_tasks.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "dp/proc_stat.hpp"

namespace dp::agent {
namespace {

bool pidfd_signal(int fd, int sig) {
  return ::syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0;
}

bool has_exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

bool LocalTasks::started(const TaskStart& t) {
  exited(t.rank);  // a rank reported twice keeps only its newest task
  UniqueFd fd = pin_process(t.pid, t.start_ticks);
  if (!fd) return false;
  tasks_[t.rank] = Task{t, std::move(fd)};
  return true;
}

void LocalTasks::exited(int rank) { tasks_.erase(rank); }

std::vector<TaskStart> LocalTasks::running() const {
  std::vector<TaskStart> out;
  for (const auto& [rank, t] : tasks_)
    if (!has_exited(t.pidfd.get())) out.push_back(t.start);
  return out;
}

int LocalTasks::signal_all(int sig, const std::set<int>& except) {
  int n = 0;
  for (const auto& [rank, t] : tasks_)
    if (!except.count(rank) && !has_exited(t.pidfd.get()) && pidfd_signal(t.pidfd.get(), sig)) ++n;
  return n;
}

int LocalTasks::end_all(Clock::time_point now, std::chrono::milliseconds grace,
                        const std::set<int>& told) {
  if (ending_since_) return 0;
  ending_since_ = now;
  kill_at_ = now + grace;
  const int n = signal_all(SIGTERM, told);
  // A stopped task (a suspended step) sees its SIGTERM only once continued.
  signal_all(SIGCONT, told);
  if (grace.count() == 0) tick(now);
  return n;
}

void LocalTasks::kill_trees() {
  for (const auto& [rank, t] : tasks_) {
    if (has_exited(t.pidfd.get())) continue;
    pidfd_signal(t.pidfd.get(), SIGSTOP);  // it forks no more while its tree goes
    kill_descendants(t.start.pid);
    pidfd_signal(t.pidfd.get(), SIGKILL);
  }
}

void LocalTasks::tick(Clock::time_point now) {
  if (!kill_at_ || now < *kill_at_) return;
  kill_at_.reset();
  const int n = signal_all(SIGKILL);
  if (n > 0)
    std::fprintf(stderr, "dp-nodeagent: %d task(s) still ran after the grace: SIGKILL\n", n);
}

bool LocalTasks::ending() const {
  if (!kill_at_) return false;
  for (const auto& [rank, t] : tasks_)
    if (!has_exited(t.pidfd.get())) return true;
  return false;
}

}  // namespace dp::agent
