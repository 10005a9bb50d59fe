// A per-node launcher's workers: their environment parsed by hand, then the watcher
// against real processes (a "launcher" that never reaps, and workers that
// carry torchrun's variables), killed as a user would.
#include "launcher_workers.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "dp/unique_fd.hpp"

namespace dp::agent {
namespace {

using namespace std::string_literals;

TEST(ParseWorkerEnviron, TorchrunsVariablesMakeAWorker) {
  const auto w = parse_worker_environ(
      "PATH=/bin\0RANK=3\0LOCAL_RANK=1\0TORCHELASTIC_RESTART_COUNT=0\0"
      "TORCHELASTIC_MAX_RESTARTS=0\0"s);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->rank, 3);
  EXPECT_EQ(w->local_rank, 1);
  EXPECT_FALSE(w->will_restart());
}

TEST(ParseWorkerEnviron, ALauncherOrAPlainTaskIsNoWorker) {
  // slurm-dp's own RANK and LOCAL_RANK on the launcher task: no TORCHELASTIC_*.
  EXPECT_FALSE(parse_worker_environ("RANK=1\0LOCAL_RANK=0\0"s));
  EXPECT_FALSE(parse_worker_environ("TORCHELASTIC_RESTART_COUNT=0\0"s));
  EXPECT_FALSE(parse_worker_environ("TORCHELASTIC_RESTART_COUNT=0\0RANK=x\0"s));
  EXPECT_FALSE(parse_worker_environ(""));
}

// A user's shell exported TORCHELASTIC_RESTART_COUNT: its children inherit
// the same values (in any order) and are no workers; torchrun's workers get
// values of their own (RANK, the per-worker error file) and are.
TEST(ParseWorkerEnviron, InheritedValuesMakeNoWorkerSetOnesDo) {
  const auto shell = parse_worker_environ("TORCHELASTIC_RESTART_COUNT=0\0RANK=0\0PATH=/bin\0"s);
  ASSERT_TRUE(shell);
  EXPECT_TRUE(shell->set_by(std::nullopt));  // the task itself: its parent is slurmstepd
  const auto failing =
      parse_worker_environ("PATH=/bin\0RANK=0\0_=/bin/false\0TORCHELASTIC_RESTART_COUNT=0\0"s);
  ASSERT_TRUE(failing);
  EXPECT_FALSE(failing->set_by(shell));
  const auto worker = parse_worker_environ(
      "PATH=/bin\0RANK=0\0LOCAL_RANK=0\0TORCHELASTIC_RESTART_COUNT=0\0"
      "TORCHELASTIC_ERROR_FILE=/tmp/torchelastic_x/attempt_0/0/error.json\0"s);
  ASSERT_TRUE(worker);
  EXPECT_TRUE(worker->set_by(shell));
  EXPECT_TRUE(worker->set_by(std::nullopt));
}

TEST(ParseWorkerEnviron, RestartsLeftMeanNoFailure) {
  const auto w =
      parse_worker_environ("TORCHELASTIC_MAX_RESTARTS=2\0TORCHELASTIC_RESTART_COUNT=1\0RANK=0"s);
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->will_restart());
  EXPECT_FALSE(
      parse_worker_environ("TORCHELASTIC_MAX_RESTARTS=2\0TORCHELASTIC_RESTART_COUNT=2\0RANK=0"s)
          ->will_restart());
}

// A launcher that never reaps (torchrun 1.13 between its 5 s polls): it
// starts its workers, each an exec'd shell with `env`, and reports their
// pids on `out`. With `reaped`, it reaps each worker at once, as torchrun
// 2.x (polling every 0.1 s) may before the agent reads the zombie, and
// writes a byte there for each. Each dies with its parent, so a failed
// assertion leaves no process holding the test's output open.
pid_t launcher(const std::vector<std::vector<std::string>>& envs, int out, int reaped = -1) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (const auto& env : envs) {
    int ready[2];
    if (pipe(ready) != 0) _exit(1);
    const pid_t w = fork();
    if (w == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::vector<char*> e;
      for (const auto& v : env) e.push_back(const_cast<char*>(v.c_str()));
      e.push_back(nullptr);
      dup2(ready[1], STDOUT_FILENO);
      char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                      const_cast<char*>("echo; exec sleep 1000"), nullptr};
      execve("/bin/sh", argv, e.data());
      _exit(127);
    }
    close(ready[1]);
    char c = 0;  // after exec: its environment is the worker's
    if (read(ready[0], &c, 1) != 1) _exit(1);
    if (write(out, &w, sizeof w) != sizeof w) _exit(1);
  }
  while (reaped >= 0 && wait(nullptr) > 0) {
    if (write(reaped, "r", 1) != 1) _exit(1);
  }
  for (;;) pause();
}

// Whether this kernel's pidfds keep a reaped process's status (Linux 6.15+).
bool pidfds_keep_exit_status() {
  const pid_t child = fork();
  if (child == 0) _exit(7);
  const UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, child, 0)));
  waitpid(child, nullptr, 0);
  const auto status = pidfd ? reaped_status(pidfd.get()) : std::nullopt;
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 7;
}

bool readable(int fd, int timeout_ms = 10'000) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

class LauncherWorkersBy : public ::testing::TestWithParam<ChildList> {
 protected:
  void SetUp() override {
    if (GetParam() == ChildList::thread_files && child_list_here() != ChildList::thread_files)
      GTEST_SKIP() << "this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)";
  }
};
INSTANTIATE_TEST_SUITE_P(ChildLists, LauncherWorkersBy,
                         ::testing::Values(ChildList::thread_files, ChildList::proc_scan));

TEST_P(LauncherWorkersBy, AKilledWorkerIsNamedWithItsRankAndSignal) {
  int pids[2];
  ASSERT_EQ(pipe(pids), 0);
  const pid_t l = launcher({{"RANK=2", "TORCHELASTIC_RESTART_COUNT=0",
                             "TORCHELASTIC_MAX_RESTARTS=1"},  // restarted: no failure
                            {"RANK=3", "TORCHELASTIC_RESTART_COUNT=0"},
                            {"RANK=1"}},  // not torchrun's: not watched
                           pids[1]);
  pid_t w[3];
  for (pid_t& p : w) ASSERT_EQ(read(pids[0], &p, sizeof p), static_cast<ssize_t>(sizeof p));
  LauncherWorkers workers(GetParam());
  workers.watch(TaskStart{1, l, read_start_ticks(l).value()});
  workers.scan();

  kill(w[2], SIGKILL);
  kill(w[0], SIGKILL);
  ASSERT_TRUE(readable(workers.fd()));
  EXPECT_TRUE(workers.ended().empty());  // rank 2 will be restarted; rank 1 is no worker

  kill(w[1], SIGKILL);
  // The fd may still be readable for the first two ends (seen under load): until one is named.
  std::vector<WorkerEnd> ends;
  for (int i = 0; i < 50 && ends.empty() && readable(workers.fd()); ++i) ends = workers.ended();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].task_rank, 1);
  EXPECT_EQ(ends[0].worker_rank, 3);
  EXPECT_TRUE(WIFSIGNALED(ends[0].wait_status) && WTERMSIG(ends[0].wait_status) == SIGKILL);
  workers.scan();  // the zombies are still its children: not watched again
  EXPECT_FALSE(readable(workers.fd(), 0));

  kill(l, SIGKILL);
  waitpid(l, nullptr, 0);
  close(pids[0]);
  close(pids[1]);
}

// torchrun 2.x reaps a dead worker within 0.1 s, which may be before the
// agent reads its zombie (seen in CI: a worker killed by the test went
// unnamed, and the first failure was the worker torchrun then stopped).
TEST_P(LauncherWorkersBy, AWorkerItsLauncherReapedFirstIsStillNamed) {
  if (!pidfds_keep_exit_status())
    GTEST_SKIP() << "this kernel's pidfds keep no exit status (PIDFD_INFO_EXIT, Linux 6.15+)";
  int pids[2], reaped[2];
  ASSERT_EQ(pipe(pids), 0);
  ASSERT_EQ(pipe(reaped), 0);
  const pid_t l = launcher({{"RANK=3", "TORCHELASTIC_RESTART_COUNT=0"}}, pids[1], reaped[1]);
  pid_t w = 0;
  ASSERT_EQ(read(pids[0], &w, sizeof w), static_cast<ssize_t>(sizeof w));
  LauncherWorkers workers(GetParam());
  workers.watch(TaskStart{1, l, read_start_ticks(l).value()});
  workers.scan();

  kill(w, SIGKILL);
  char c = 0;
  ASSERT_EQ(read(reaped[0], &c, 1), 1);  // its launcher has reaped it: no zombie to read
  ASSERT_TRUE(readable(workers.fd()));
  const auto ends = workers.ended();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].worker_rank, 3);
  EXPECT_TRUE(WIFSIGNALED(ends[0].wait_status) && WTERMSIG(ends[0].wait_status) == SIGKILL);

  kill(l, SIGKILL);
  waitpid(l, nullptr, 0);
  for (int f : {pids[0], pids[1], reaped[0], reaped[1]}) close(f);
}

TEST_P(LauncherWorkersBy, ChildrenAndTheirChildrenAreFoundTwoLevelsDown) {
  int pids[2];
  ASSERT_EQ(pipe(pids), 0);
  const pid_t l = launcher({{"RANK=0", "TORCHELASTIC_RESTART_COUNT=0"}}, pids[1]);
  pid_t w = 0;
  ASSERT_EQ(read(pids[0], &w, sizeof w), static_cast<ssize_t>(sizeof w));
  const Children kids = children_under({getpid()}, 2, GetParam());
  auto has = [&](int parent, int child) {
    auto it = kids.find(parent);
    if (it == kids.end()) return false;
    for (const auto& [pid, st] : it->second)
      if (pid == child) return st.ppid == parent;
    return false;
  };
  EXPECT_TRUE(has(getpid(), l));
  EXPECT_TRUE(has(l, w));
  kill(w, SIGKILL);  // it holds the test's output open
  kill(l, SIGKILL);
  waitpid(l, nullptr, 0);
  close(pids[0]);
  close(pids[1]);
}

}  // namespace
}  // namespace dp::agent
