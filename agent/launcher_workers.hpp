// The workers of a per-node launcher (torchrun and its kin), watched so that
// a worker's death is the node's failure at once: torchrun notices it only
// at its next poll (every 5 s on torch 1.13), by when the other nodes'
// workers have died of the broken collective and could be named instead.
//
// Which processes are workers: only the task of a launcher step is watched
// (the plugin's launch shape, the agent's workers=watch setting); its
// children (from the kernel's children files, or by parent pid in /proc), and a shell's children
// under it, whose environment holds
// TORCHELASTIC_RESTART_COUNT are the workers: torchrun's elastic agent sets
// it (with RANK, LOCAL_RANK and TORCHELASTIC_MAX_RESTARTS) for each worker
// only, so no command line has to be recognised and the variables also say
// whether a failure will be restarted in place (--max-restarts: no failure).
// Only values a process's parent set make it a worker: the same values in its
// parent's environment were inherited (a user's shell that exported them),
// and such a process (a failing command before torchrun) is no worker.
//
// Each worker is pinned by a pidfd opened after its start time was read, so
// a reused pid is never taken for it. An ended worker stays a zombie until
// the launcher reaps it, and /proc/PID/stat's exit_code (field 52, the wait
// status, readable by the same user) says how it ended.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/proc_stat.hpp"
#include "launch_contract.hpp"

namespace dp::agent {

// ---- pure parsing, for the tests ----

struct WorkerEnv {
  int rank = -1, local_rank = -1;
  int restart_count = 0, max_restarts = 0;
  // The worker variables' values as found (torchrun's per-worker error file
  // among them): equal in parent and child means inherited, not set.
  std::string assignment;
  // A failure of this worker is followed by a restart in place, not the end.
  bool will_restart() const { return restart_count < max_restarts; }
  // Its launcher set these values: its parent has none, or others.
  bool set_by(const std::optional<WorkerEnv>& parent) const {
    return !parent || parent->assignment != assignment;
  }
};
// /proc/PID/environ (NUL-separated); nothing unless it is a launcher's worker.
std::optional<WorkerEnv> parse_worker_environ(std::string_view environ);

// ---- where children are found ----

using Children = std::map<int, std::vector<std::pair<int, ProcStat>>>;  // by parent pid
enum class ChildList : uint8_t {
  // The kernel's per-thread children files (CONFIG_PROC_CHILDREN): a scan
  // costs the step's own processes, whatever else runs on the node.
  thread_files,
  // Kernels without them: one pass over /proc, reading only this user's
  // processes (another user's cost a stat of its directory).
  proc_scan,
};
ChildList child_list_here();
// The processes under `roots` by parent, `depth` levels down (proc_scan: all
// of this user's, a superset).
Children children_under(const std::vector<int>& roots, int depth, ChildList how);

// How the process of this pidfd ended (a wait status), once it was reaped:
// Linux 6.15 and later keep it with the pidfd (PIDFD_INFO_EXIT); nothing on
// older kernels, or before the reap.
std::optional<int> reaped_status(int pidfd);

// ---- the watcher ----

struct WorkerEnd {
  int task_rank = -1;  // the launcher's (Slurm task) rank
  int worker_rank = -1;
  int wait_status = 0;
};

class LauncherWorkers {
 public:
  static constexpr size_t kMaxWorkersPerTask = 1024;
  static constexpr size_t kMaxProcsPerScan = 1024;

  explicit LauncherWorkers(ChildList how = child_list_here());

  // Readable when a watched worker ended (an epoll set of the workers' pidfds).
  int fd() const { return epoll_.get(); }
  void watch(const TaskStart& task);
  void forget(int task_rank);
  // Finds new workers of the watched tasks; call about once a second.
  void scan();
  // The workers that ended since, whose end is a failure the launcher will
  // not restart: a signal or a non-zero exit, read while they are zombies.
  std::vector<WorkerEnd> ended();
  // The workers found so far, each with its torch RANK and start time
  // (dp-top --stacks reads them: in a launcher step they are the ranks).
  std::vector<TaskStart> running() const;

 private:
  struct Worker {
    int task_rank = -1;
    unsigned long long start_ticks = 0;
    WorkerEnv env;
    UniqueFd pidfd;
  };
  using Proc = std::pair<int, unsigned long long>;  // pid, start time
  void consider(int task_rank, int parent, const Children& kids, int depth, size_t& budget);
  void add(int task_rank, int pid, unsigned long long start, const WorkerEnv& env);
  void drop(int pid);
  size_t count(int task_rank) const;

  ChildList how_;
  UniqueFd epoll_;
  std::map<int, TaskStart> tasks_;  // rank -> the task
  std::map<int, Worker> workers_;   // pid -> worker
  std::set<Proc> ended_;            // still listed as children until reaped
  std::set<Proc> seen_;             // found by the scan under way
};

}  // namespace dp::agent
