// LocalTasks against real child processes: a task is signalled only through
// the pidfd of the process that started when root said, SIGTERM first, then
// SIGKILL once the grace is over.
#include "local_tasks.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dp::agent {
namespace {

using Clock = LocalTasks::Clock;

// A child that exits 0 on SIGTERM when `term_ok`, else ignores it.
// Ignored before the fork: a SIGTERM that comes at once finds it ignored.
pid_t child(bool term_ok) {
  const auto old = signal(SIGTERM, term_ok ? SIG_DFL : SIG_IGN);
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  signal(SIGTERM, old);
  return pid;
}

TaskStart start_of(int rank, pid_t pid) {
  auto t = read_start_ticks(pid);
  EXPECT_TRUE(t);
  return TaskStart{rank, pid, t.value_or(0)};
}

int wait_status(pid_t pid) {
  int st = 0;
  EXPECT_EQ(waitpid(pid, &st, 0), pid);
  return st;
}

TEST(LocalTasks, EndAllSendsSigtermAndSigkillAfterTheGrace) {
  const pid_t polite = child(true), stubborn = child(false);
  LocalTasks tasks;
  ASSERT_TRUE(tasks.started(start_of(0, polite)));
  ASSERT_TRUE(tasks.started(start_of(1, stubborn)));
  const auto t0 = Clock::now();
  EXPECT_EQ(tasks.end_all(t0, std::chrono::milliseconds(500)), 2);
  const int polite_st = wait_status(polite);
  EXPECT_TRUE(WIFSIGNALED(polite_st) && WTERMSIG(polite_st) == SIGTERM);
  tasks.tick(t0 + std::chrono::milliseconds(100));  // within the grace: nothing more
  EXPECT_EQ(waitpid(stubborn, nullptr, WNOHANG), 0);
  EXPECT_TRUE(tasks.ending());
  tasks.tick(t0 + std::chrono::milliseconds(500));
  const int stubborn_st = wait_status(stubborn);
  EXPECT_TRUE(WIFSIGNALED(stubborn_st) && WTERMSIG(stubborn_st) == SIGKILL);
  EXPECT_EQ(tasks.end_all(t0, std::chrono::milliseconds(0)), 0);  // once per step
}

TEST(LocalTasks, AProcessThatStartedAtAnotherTimeIsNotTheTask) {
  const pid_t pid = child(true);
  TaskStart wrong = start_of(0, pid);
  wrong.start_ticks += 1;  // what a process that reused the pid would show
  LocalTasks tasks;
  EXPECT_FALSE(tasks.started(wrong));
  EXPECT_EQ(tasks.end_all(Clock::now(), std::chrono::milliseconds(0)), 0);
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0);  // untouched
  kill(pid, SIGKILL);
  wait_status(pid);
}

TEST(LocalTasks, RanksToldThroughLibdpGetNoSigtermOnlyTheLateSigkill) {
  const pid_t told = child(false);
  LocalTasks tasks;
  ASSERT_TRUE(tasks.started(start_of(5, told)));
  const auto t0 = Clock::now();
  EXPECT_EQ(tasks.end_all(t0, std::chrono::milliseconds(200), {5}), 0);
  EXPECT_TRUE(tasks.ending());
  tasks.tick(t0 + std::chrono::milliseconds(200));
  const int st = wait_status(told);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

TEST(LocalTasks, AnExitedTaskIsNeverSignalled) {
  const pid_t pid = child(true);
  LocalTasks tasks;
  ASSERT_TRUE(tasks.started(start_of(0, pid)));
  tasks.exited(0);
  EXPECT_EQ(tasks.end_all(Clock::now(), std::chrono::milliseconds(0)), 0);
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0);
  kill(pid, SIGKILL);
  wait_status(pid);
}

}  // namespace
}  // namespace dp::agent
