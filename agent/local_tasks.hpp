// The node's tasks as the agent may signal them: a pidfd per task, opened from
// the pid root reported at fork and checked against the task's start time, so
// a signal can only ever reach that task, never a process that reused its pid.
// When the step fails the agent ends them: SIGTERM first (frameworks flush or
// checkpoint), SIGKILL once the site's grace is over for any still running.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launch_contract.hpp"

namespace dp::agent {

class LocalTasks {
 public:
  using Clock = std::chrono::steady_clock;

  // A task was forked. False (and nothing kept) when its pid no longer names
  // it: it already ended, and no signal is needed or safe.
  bool started(const TaskStart& t);
  // slurmstepd reaped the task: it is never signalled again.
  void exited(int rank);
  // SIGTERM to every running task but the ranks in `told` (they heard the
  // verdict through libdp and end on their own, naming it), SIGKILL to any
  // still running `grace` later. Once per step. Returns how many got SIGTERM.
  int end_all(Clock::time_point now, std::chrono::milliseconds grace,
              const std::set<int>& told = {});
  // SIGKILL now to every running task's whole process tree, no grace (a
  // fenced node): the tree first, so nothing is orphaned to init unseen.
  void kill_trees();
  // Sends the SIGKILL when the grace is over. Call a few times a second.
  void tick(Clock::time_point now);
  // The tasks still running, as root reported them (dp-top --stacks reads them).
  std::vector<TaskStart> running() const;
  // An end was ordered and some task may still run: the agent stays to finish it.
  bool ending() const;

 private:
  int signal_all(int sig, const std::set<int>& except = {});
  struct Task {
    TaskStart start;  // as reported
    UniqueFd pidfd;
  };
  std::map<int, Task> tasks_;  // by rank
  std::optional<Clock::time_point> ending_since_, kill_at_;
};

}  // namespace dp::agent
