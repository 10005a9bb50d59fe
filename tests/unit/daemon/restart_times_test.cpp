// One restart's clock alone: its five phases from plain events, when its
// line is due, and which failures count as "at once".
#include "restart_times.hpp"

#include <gtest/gtest.h>

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;
using TimesPhases = std::array<int64_t, kRestartPhases>;

const Clock::time_point kTimes0 = Clock::time_point{} + std::chrono::hours(1);
Clock::time_point ms_after(int ms) { return kTimes0 + milliseconds(ms); }

TEST(RestartTimes, APyTorchRestartsFivePhasesFromItsEvents) {
  RestartTimes t(4);
  t.open(ms_after(-300), ms_after(0));  // the lost node was last heard 300 ms before
  t.stopped(ms_after(1000));
  t.started(ms_after(1100));
  t.store_clients(2, ms_after(2000));  // one node's two clients, folded
  EXPECT_FALSE(t.due(ms_after(2500), false, false));
  t.store_clients(2, ms_after(3000));  // the world's four: the programs met
  EXPECT_FALSE(t.due(ms_after(4999), false, false));
  EXPECT_TRUE(t.due(ms_after(5000), false, false));  // no counters: 2 s after the rendezvous
  EXPECT_EQ(t.close(ms_after(5000), false), (TimesPhases{300, 1000, 100, 1900, -1}));
  EXPECT_FALSE(t.is_open());
  EXPECT_FALSE(t.close(ms_after(6000), true));
}

TEST(RestartTimes, ALibdpRestartsLineWaitsForItsFirstStep) {
  RestartTimes t(2);
  t.open(ms_after(0), ms_after(0));
  t.stopped(ms_after(100));
  t.started(ms_after(200));
  t.initialized(ms_after(700));
  EXPECT_FALSE(t.due(ms_after(5000), false, true));  // counters come: their first step is awaited
  EXPECT_TRUE(t.due(ms_after(5000), true, true));
  EXPECT_EQ(t.close(ms_after(5000), true), (TimesPhases{0, 100, 100, 500, 4300}));
  // One that never steps goes out kLineWait after its start.
  t.open(ms_after(10'000), ms_after(10'000));
  t.keep_open();                                        // a further loss joins it
  EXPECT_FALSE(t.due(ms_after(100'000), false, true));  // not started: nothing to wait out
  t.stopped(ms_after(10'100));
  t.started(ms_after(10'200));
  EXPECT_FALSE(t.due(ms_after(70'199), false, true));
  EXPECT_TRUE(t.due(ms_after(70'200), false, true));
  EXPECT_EQ(t.close(ms_after(70'200), false), (TimesPhases{0, 100, 100, -1, -1}));
}

TEST(RestartTimes, ALaunchersRestartHasOnlyItsDetection) {
  RestartTimes t(3);
  t.open(ms_after(-2000), ms_after(0));
  EXPECT_EQ(t.close(ms_after(0), false), (TimesPhases{2000, -1, -1, -1, -1}));
}

TEST(RestartTimes, AFailureIsAtOnceUntilTheProgramsMetAndRanTenSeconds) {
  RestartTimes t(2);
  EXPECT_TRUE(t.at_once(ms_after(0)));  // never met
  EXPECT_FALSE(t.settled(ms_after(0)));
  t.store_clients(1, ms_after(100));
  EXPECT_TRUE(t.at_once(ms_after(60'000)));  // one of two clients: not met
  t.store_clients(1, ms_after(200));
  EXPECT_TRUE(t.at_once(ms_after(200 + kAtOnceMs - 1)));
  EXPECT_FALSE(t.at_once(ms_after(200 + kAtOnceMs)));
  EXPECT_TRUE(t.settled(ms_after(200 + kAtOnceMs)));
  t.stopped(ms_after(20'000));  // the next generation has not met
  EXPECT_TRUE(t.at_once(ms_after(40'000)));
  t.store_clients(1, ms_after(40'000));
  EXPECT_TRUE(t.at_once(ms_after(60'000)));  // the count began anew
}

}  // namespace
}  // namespace dp::daemon
