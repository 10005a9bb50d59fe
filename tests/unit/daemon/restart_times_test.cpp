// One restart's clock alone: its five phases from plain events, when its
// line is due, and which failures count as "at once".
#include "restart_times.hpp"

#include <gtest/gtest.h>

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;
using Phases = std::array<int64_t, kRestartPhases>;

const Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
Clock::time_point at(int ms) { return t0 + milliseconds(ms); }

TEST(RestartTimes, APyTorchRestartsFivePhasesFromItsEvents) {
  RestartTimes t(4);
  t.open(at(-300), at(0));  // the lost node was last heard 300 ms before
  t.stopped(at(1000));
  t.started(at(1100));
  t.store_clients(2, at(2000));  // one node's two clients, folded
  EXPECT_FALSE(t.due(at(2500), false, false));
  t.store_clients(2, at(3000));  // the world's four: the programs met
  EXPECT_FALSE(t.due(at(4999), false, false));
  EXPECT_TRUE(t.due(at(5000), false, false));  // no counters: 2 s after the rendezvous
  EXPECT_EQ(t.close(at(5000), false), (Phases{300, 1000, 100, 1900, -1}));
  EXPECT_FALSE(t.is_open());
  EXPECT_FALSE(t.close(at(6000), true));
}

TEST(RestartTimes, ALibdpRestartsLineWaitsForItsFirstStep) {
  RestartTimes t(2);
  t.open(at(0), at(0));
  t.stopped(at(100));
  t.started(at(200));
  t.initialized(at(700));
  EXPECT_FALSE(t.due(at(5000), false, true));  // counters come: their first step is awaited
  EXPECT_TRUE(t.due(at(5000), true, true));
  EXPECT_EQ(t.close(at(5000), true), (Phases{0, 100, 100, 500, 4300}));
  // One that never steps goes out kLineWait after its start.
  t.open(at(10'000), at(10'000));
  t.keep_open();                                  // a further loss joins it
  EXPECT_FALSE(t.due(at(100'000), false, true));  // not started: nothing to wait out
  t.stopped(at(10'100));
  t.started(at(10'200));
  EXPECT_FALSE(t.due(at(70'199), false, true));
  EXPECT_TRUE(t.due(at(70'200), false, true));
  EXPECT_EQ(t.close(at(70'200), false), (Phases{0, 100, 100, -1, -1}));
}

TEST(RestartTimes, ALaunchersRestartHasOnlyItsDetection) {
  RestartTimes t(3);
  t.open(at(-2000), at(0));
  EXPECT_EQ(t.close(at(0), false), (Phases{2000, -1, -1, -1, -1}));
}

TEST(RestartTimes, AFailureIsAtOnceUntilTheProgramsMetAndRanTenSeconds) {
  RestartTimes t(2);
  EXPECT_TRUE(t.at_once(at(0)));  // never met
  EXPECT_FALSE(t.settled(at(0)));
  t.store_clients(1, at(100));
  EXPECT_TRUE(t.at_once(at(60'000)));  // one of two clients: not met
  t.store_clients(1, at(200));
  EXPECT_TRUE(t.at_once(at(200 + kAtOnceMs - 1)));
  EXPECT_FALSE(t.at_once(at(200 + kAtOnceMs)));
  EXPECT_TRUE(t.settled(at(200 + kAtOnceMs)));
  t.stopped(at(20'000));  // the next generation has not met
  EXPECT_TRUE(t.at_once(at(40'000)));
  t.store_clients(1, at(40'000));
  EXPECT_TRUE(t.at_once(at(60'000)));  // the count began anew
}

}  // namespace
}  // namespace dp::daemon
