// RankSampler against real children: started by the daemon's ask, it looks
// at each rank on its own thread and counts; a rank's counts are its own
// process's (a new pid under the same rank starts again); a rank gone, or a
// pid now another process's, is no longer counted.
#include "rank_sampler.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "dp/proc_stat.hpp"

namespace dp::agent {
namespace {

pid_t sleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  return pid;
}

TaskStart task(int rank, pid_t pid) {
  return TaskStart{rank, pid, read_start_ticks(pid).value_or(0)};
}

// The counts once rank `rank` has at least `looks` looks (at most 5 s).
proto::RankSamples counts_of(const RankSampler& s, int rank, uint64_t looks) {
  for (int i = 0; i < 500; ++i) {
    for (const auto& c : s.counts())
      if (c.rank() == rank && c.looks() >= looks) return c;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

TEST(RankSampler, CountsEachRanksLooksOnceStarted) {
  const pid_t a = sleeper(), b = sleeper();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  RankSampler s;
  s.set_ranks({task(0, a), task(1, b)});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(s.counts().empty()) << "nothing is read before the daemon asks";
  s.start(std::chrono::milliseconds(10));
  const auto c = counts_of(s, 1, 5);
  EXPECT_EQ(c.pid(), b);
  EXPECT_GE(c.looks(), 5u);
  EXPECT_EQ(c.waiting(), 0u) << "asleep in pause: neither waiting nor running";
  EXPECT_GT(c.at_ms(), 0u);
  // Rank 1 ends: it is no longer counted; rank 0 is.
  kill(b, SIGKILL);
  waitpid(b, nullptr, 0);
  const uint64_t before = counts_of(s, 0, 1).looks();
  counts_of(s, 0, before + 3);
  for (const auto& x : s.counts()) EXPECT_NE(x.rank(), 1) << "a gone rank is counted";
  // A pid that names another process (a restart): its counts start again.
  s.set_ranks({TaskStart{0, a, 1}});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(s.counts().empty()) << "a pid whose start time differs is not this rank";
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
}

}  // namespace
}  // namespace dp::agent
