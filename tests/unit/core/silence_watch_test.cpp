// The silence of a peer that pings every second, as libdp's client and the
// node agent judge it: over at the limit, reset by a word, and forgiven for
// the time this process itself was stopped.
#include "dp/silence_watch.hpp"

#include <gtest/gtest.h>

namespace dp {
namespace {

using namespace std::chrono_literals;
using Clock = SilenceWatch::Clock;

TEST(SilenceWatch, APeerSilentForTheLimitIsOverAndAWordResetsIt) {
  const auto t0 = Clock::now();
  SilenceWatch w(6s, 1s, t0);
  EXPECT_EQ(w.deadline(), t0 + 6s);
  for (auto t = t0 + 1s; t < t0 + 6s; t += 1s) {
    w.woke(t);
    EXPECT_FALSE(w.over(t));
  }
  w.woke(t0 + 6s);
  EXPECT_TRUE(w.over(t0 + 6s));
  EXPECT_EQ(w.silent(t0 + 6s), 6s);
  w.heard(t0 + 6s);
  EXPECT_FALSE(w.over(t0 + 6s));
  EXPECT_EQ(w.deadline(), t0 + 12s);
}

TEST(SilenceWatch, AWakeLateByMoreThanASecondIsThisProcessStoppedNotThePeerSilent) {
  const auto t0 = Clock::now();
  SilenceWatch w(6s, 1s, t0);
  w.woke(t0 + 1s);
  w.woke(t0 + 30s);  // a suspended job, resumed
  EXPECT_FALSE(w.over(t0 + 30s));
  EXPECT_EQ(w.silent(t0 + 30s), 0s);
  w.woke(t0 + 31s);
  w.woke(t0 + 32s);  // on time: the silence counts again
  EXPECT_EQ(w.silent(t0 + 32s), 2s);
}

TEST(SilenceWatch, NoLimitNeverEnds) {
  const auto t0 = Clock::now();
  SilenceWatch w(0s, 1s, t0);
  EXPECT_FALSE(w.bounded());
  EXPECT_FALSE(w.over(t0 + 24h));
  EXPECT_EQ(w.deadline(), Clock::time_point::max());
}

}  // namespace
}  // namespace dp
