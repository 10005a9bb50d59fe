// The daemon's own stacks rounds alone (stacks_watch.hpp): when the hang
// watch's rounds are due and read the flight recorders, the straggler
// watch's blocks, and the hang a still step's rounds name, with its
// detector and whether it may end the step. No broker, no agents.
#include "stacks_watch.hpp"

#include <gtest/gtest.h>

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point kWatch0 = Clock::time_point{} + std::chrono::hours(1);

// Rank r asleep at hang.py's line (rank 3) or in all_reduce (the others).
std::vector<stacks::RankStacks> still_step() {
  std::vector<stacks::RankStacks> out;
  for (int r = 0; r < 4; ++r) {
    stacks::ProcessStacks p;
    p.pid = 1000 + r;
    p.python = "3.14.8";
    const stacks::Frame f = r == 3 ? stacks::Frame{"stall", "/home/u/hang.py", 21}
                                   : stacks::Frame{"all_reduce", "/t/distributed_c10d.py", 3913};
    p.threads.push_back({p.pid, {f}, false, std::nullopt, {}, {}});
    out.push_back({r, r < 2 ? "n1" : "n2", std::move(p)});
  }
  return out;
}

TEST(StacksWatch, WithoutAHangTimeoutOrAStragglerNoRoundIsEverDue) {
  StacksWatch w(milliseconds(0), false, 100, kWatch0);
  for (int s = 0; s < 100; s += 7) EXPECT_FALSE(w.due(kWatch0 + seconds(s), nullptr).round);
  EXPECT_FALSE(w.judge(still_step(), {}, true, kWatch0, nullptr, false).has_value());
}

TEST(StacksWatch, TheHangWatchsRoundsComeEveryEighthOfTheBoundAndReadTheFlightRecorders) {
  StacksWatch w(seconds(20), false, 100, kWatch0);
  EXPECT_FALSE(w.due(kWatch0 + milliseconds(2'499), nullptr).round);
  const auto first = w.due(kWatch0 + milliseconds(2'500), nullptr);
  EXPECT_TRUE(first.round);
  EXPECT_TRUE(first.flight);
  EXPECT_FALSE(w.due(kWatch0 + milliseconds(4'999), nullptr).round) << "counted from the last";
  EXPECT_TRUE(w.due(kWatch0 + milliseconds(5'000), nullptr).round);
}

TEST(StacksWatch, TheStragglerWatchsBlocksEndOnTheirOwnClock) {
  StacksWatch w(milliseconds(0), false, 100, kWatch0);
  EXPECT_FALSE(w.block_end(kWatch0 + StragglerReport::kBlock - milliseconds(1)).has_value());
  const auto first = w.block_end(kWatch0 + StragglerReport::kBlock + milliseconds(500));
  ASSERT_TRUE(first.has_value());
  EXPECT_DOUBLE_EQ(
      *first, std::chrono::duration<double>(StragglerReport::kBlock + milliseconds(500)).count());
  EXPECT_FALSE(w.block_end(kWatch0 + StragglerReport::kBlock * 2).has_value())
      << "the next block starts at the last one's end";
}

TEST(StacksWatch, AStillStepIsNamedByTheStacksOnceTheBoundPasses) {
  StacksWatch w(seconds(20), true, 100, kWatch0);
  std::optional<StacksWatch::Hang> hang;
  int rounds = 0;
  for (; rounds < 40 && !hang; ++rounds)
    hang = w.judge(still_step(), {}, true, kWatch0 + milliseconds(2'500) * rounds, nullptr, false);
  ASSERT_TRUE(hang.has_value());
  EXPECT_GE(milliseconds(2'500) * (rounds - 1), seconds(20)) << "not before the bound";
  EXPECT_EQ(hang->cause.how, AbortCause::How::hang);
  EXPECT_EQ(hang->cause.rank, 3) << "the odd rank first";
  EXPECT_EQ(hang->which, "stacks #1");
  EXPECT_TRUE(hang->may_end);
  EXPECT_NE(hang->cause.message.find("no rank has made progress for"), std::string::npos)
      << hang->cause.message;
  EXPECT_FALSE(hang->view.empty());
}

TEST(StacksWatch, LibdpsCountersJudgeTheirOwnStep) {
  StacksWatch w(seconds(20), false, 100, kWatch0);
  for (int i = 0; i < 40; ++i)
    EXPECT_FALSE(w.judge(still_step(), {}, true, kWatch0 + milliseconds(2'500) * i, nullptr, true)
                     .has_value());
}

}  // namespace
}  // namespace dp::daemon
