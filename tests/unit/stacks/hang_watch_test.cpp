// The hang rule from recorded rounds: a 2x2 step whose rank 3 sleeps while
// the others wait in all_reduce is named once, after the timeout and not
// before; computing ranks, moving frames, restarts and unread nodes are not.
#include "dp/stacks/hang_watch.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>

// Its own namespace: the unity build puts this file beside merge_test.cpp.
namespace dp::stacks::hang_watch_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = HangWatch::Clock;

const Frame kMain{"main", "/home/u/hang.py", 30};
const Frame kAllReduce{
    "all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 3913};
// time.sleep is a C function with no frame: a reader sees the line that calls it.
const Frame kSleep{"stall", "/home/u/hang.py", 21};

RankStacks rank(int r, std::vector<Frame> frames, unsigned long long cpu = 0, int pid = 0) {
  ProcessStacks p;
  p.pid = pid ? pid : 1000 + r;
  p.python = "3.14.8";
  p.cpu_ticks = cpu;
  p.threads.push_back({p.pid, std::move(frames), false, std::nullopt, {}, {}});
  return {r, r < 2 ? "n1" : "n2", std::move(p)};
}

std::vector<RankStacks> hung(unsigned long long cpu = 0) {
  return {rank(0, {kAllReduce, kMain}, cpu), rank(1, {kAllReduce, kMain}, cpu),
          rank(2, {kAllReduce, kMain}, cpu), rank(3, {kSleep, kMain}, cpu)};
}

// Rounds every `every` from t0 until a verdict or `until`; when it came.
std::optional<milliseconds> first_verdict(HangWatch& w, Clock::time_point t0, milliseconds every,
                                          milliseconds until, std::vector<RankStacks> (*round)(int),
                                          HangVerdict* out = nullptr) {
  for (int i = 0; milliseconds(every * i) <= until; ++i) {
    if (auto v = w.observe(t0 + every * i, round(i), true)) {
      if (out) *out = *v;
      return every * i;
    }
  }
  return std::nullopt;
}

TEST(HangWatch, SampleEveryIsAnEighthWithinBounds) {
  EXPECT_EQ(hang_sample_every(seconds(20)), milliseconds(2'500));
  EXPECT_EQ(hang_sample_every(seconds(2)), milliseconds(1'000));
  EXPECT_EQ(hang_sample_every(seconds(600)), milliseconds(15'000));
}

TEST(HangWatch, AStillStepIsNamedOnceAfterTheTimeoutWithTheOddRankFirst) {
  HangWatch w(seconds(20), 100);
  HangVerdict v;
  const auto at = first_verdict(
      w, Clock::time_point{}, milliseconds(2'500), seconds(60), [](int) { return hung(); }, &v);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(*at, seconds(20));
  EXPECT_GE(v.still, seconds(20));
  EXPECT_EQ(v.summary,
            "rank 3 (n2, pid 1003): stall hang.py:21 <- main hang.py:30; ranks 0-2: "
            "all_reduce distributed_c10d.py:3913 <- main hang.py:30");
  ASSERT_EQ(v.lines.size(), 2u);
  // Named once: the same stillness gives no second verdict.
  for (int i = 1; i < 10; ++i)
    EXPECT_FALSE(w.observe(Clock::time_point{} + seconds(60) + seconds(i), hung(), true));
}

// Issue 68: rank 2 stuck in its own input (its DataLoader's queue, asleep in
// futex like the others) while the others wait in the broadcast whose root is
// rank 0: rank 2 is the odd one out and leads the line, not rank 0, whose
// stack (the root's line) is as lone as rank 2's.
TEST(HangWatch, ARankStuckInItsOwnInputIsTheOddOneOut) {
  const std::string torch = "/usr/lib/python3/dist-packages/torch/";
  const Frame root{"broadcast", torch + "distributed/distributed_c10d.py", 2730};
  const Frame leaf{"broadcast", torch + "distributed/distributed_c10d.py", 2741};
  const Frame data{"_get_data", torch + "utils/data/dataloader.py", 1466};
  const Frame queue{"Condition.wait", "/usr/lib/python3.11/threading.py", 324};
  static std::vector<RankStacks> ranks;
  ranks.clear();
  for (int r = 0; r < 4; ++r) {
    auto frames = r == 0   ? std::vector<Frame>{root, kMain}
                  : r == 2 ? std::vector<Frame>{queue, data, kMain}
                           : std::vector<Frame>{leaf, kMain};
    RankStacks x = rank(r, std::move(frames));
    x.stacks.threads[0].kernel =
        KernelThread{x.stacks.pid, "python3", 'S', 0, "futex_do_wait", SYS_futex};
    ranks.push_back(std::move(x));
  }
  HangWatch w(seconds(20), 100);
  HangVerdict v;
  ASSERT_TRUE(first_verdict(
      w, Clock::time_point{}, milliseconds(2'500), seconds(60), [](int) { return ranks; }, &v));
  EXPECT_EQ(v.odd_rank, 2);
  EXPECT_EQ(v.odd_host, "n2");
  EXPECT_EQ(v.summary.rfind("rank 2 (n2, pid 1002): [futex] <- Condition.wait threading.py:324 <- "
                            "_get_data dataloader.py:1466",
                            0),
            0u)
      << v.summary;
}

TEST(HangWatch, ComputingRanksAreProgressEvenWithTheSameFrames) {
  HangWatch w(seconds(20), 100);
  // 2.5 s between rounds, 30 ticks each (12 % of a CPU): computing.
  EXPECT_FALSE(first_verdict(w, Clock::time_point{}, milliseconds(2'500), seconds(120),
                             [](int i) { return hung(30ull * static_cast<unsigned>(i)); }));
}

TEST(HangWatch, OtherThreadsWakeupsUnderTheShareAreNotProgress) {
  HangWatch w(seconds(20), 100);
  // 5 ticks per 2.5 s (2 %), none of them the main thread's: a waiting
  // rank's housekeeping (gloo's and PyTorch's own threads).
  EXPECT_TRUE(first_verdict(w, Clock::time_point{}, milliseconds(2'500), seconds(60),
                            [](int i) { return hung(5ull * static_cast<unsigned>(i)); }));
}

TEST(HangWatch, AMainThreadThatRunsAtAllIsProgress) {
  HangWatch w(seconds(10), 100);
  // A loop that sleeps 100 ms per step (1 % CPU) with frames that look the
  // same at every round, or none read (Python 3.11): its main thread runs.
  auto loop = [](int i) {
    auto r = hung(static_cast<unsigned long long>(i));
    for (auto& x : r)
      x.stacks.threads[0].kernel =
          KernelThread{x.stacks.pid, "python3", 'S', static_cast<unsigned long long>(i), "", 230};
    return r;
  };
  for (int i = 0; i <= 40; ++i)
    EXPECT_FALSE(w.observe(Clock::time_point{} + seconds(i), loop(i), true)) << i << " s";
}

TEST(HangWatch, MovingFramesAreProgressAndRestartTheClock) {
  HangWatch w(seconds(20), 100);
  // Rank 0 sleeps 15 s before each save: its line changes every 15 s.
  const auto at = first_verdict(w, Clock::time_point{}, seconds(1), seconds(90), [](int i) {
    auto r = hung();
    r[0] = rank(0, {kSleep, {"save", "/home/u/hang.py", (i / 15) % 2 ? 40 : 41}, kMain});
    return r;
  });
  EXPECT_FALSE(at.has_value());
}

TEST(HangWatch, ARestartedRankIsProgress) {
  HangWatch w(seconds(10), 100);
  const auto t0 = Clock::time_point{};
  for (int i = 0; i <= 8; ++i) EXPECT_FALSE(w.observe(t0 + seconds(i), hung(), true));
  auto restarted = hung();
  restarted[2] = rank(2, {kAllReduce, kMain}, 0, 9999);
  EXPECT_FALSE(w.observe(t0 + seconds(9), restarted, true));
  EXPECT_FALSE(w.observe(t0 + seconds(18), restarted, true)) << "the clock restarted at 9 s";
  EXPECT_TRUE(w.observe(t0 + seconds(19), restarted, true));
}

TEST(HangWatch, ARankThatExitedIsNotAHang) {
  HangWatch w(seconds(5), 100);
  auto gone = hung();
  gone[1].stacks.no_python = NoStacks{NoPython::gone, "pid 1001 has exited"};
  for (int i = 0; i <= 20; ++i)
    EXPECT_FALSE(w.observe(Clock::time_point{} + seconds(i), gone, true));
}

TEST(HangWatch, ASuspendedStepIsNotAHang) {
  HangWatch w(seconds(5), 100);
  auto stopped = hung();
  for (auto& r : stopped)
    r.stacks.threads[0].kernel =
        KernelThread{r.stacks.pid, "python3", 'T', 0, "do_signal_stop", -1};
  for (int i = 0; i <= 20; ++i)
    EXPECT_FALSE(w.observe(Clock::time_point{} + seconds(i), stopped, true));
}

// Unknown is not stuck: a rank the round could not read (its node did not
// answer, its read was not done in time) gives no hang verdict; after twice
// the timeout the step is named as one whose ranks could not be read.
TEST(HangWatch, AnUnreadNodeIsUnknownNotStuck) {
  HangWatch w(seconds(10), 100);
  const auto t0 = Clock::time_point{};
  EXPECT_FALSE(w.observe(t0, hung(), true));
  auto half = hung();
  half.resize(2);  // n2 did not answer: no evidence, and no progress either
  for (int i = 1; i < 20; ++i) EXPECT_FALSE(w.observe(t0 + seconds(i), half, false)) << i;
  auto v = w.observe(t0 + seconds(20), half, false);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->unknown());
  EXPECT_EQ(v->unknown_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(v->summary.rfind("ranks 2-3 could not be read", 0), 0u) << v->summary;
  EXPECT_EQ(v->odd_rank, -1);
  EXPECT_FALSE(w.observe(t0 + seconds(21), half, false)) << "named once";
  // Every rank read again, none moved: now it is a hang.
  v = w.observe(t0 + seconds(22), hung(), true);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->unknown());
  EXPECT_EQ(v->odd_rank, 3);
}

TEST(HangWatch, ARankReadTooLateIsUnknownNotStuck) {
  HangWatch w(seconds(10), 100);
  const auto t0 = Clock::time_point{};
  auto late = [] {
    auto r = hung();
    r[3].stacks.threads.clear();
    r[3].stacks.no_python = NoStacks{NoPython::over_time, "pid 1003 was not read within 1500 ms"};
    return r;
  };
  EXPECT_FALSE(w.observe(t0, hung(), true));
  for (int i = 1; i < 20; ++i) EXPECT_FALSE(w.observe(t0 + seconds(i), late(), true)) << i;
  auto v = w.observe(t0 + seconds(20), late(), true);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->unknown_ranks, (std::vector<int>{3}));
  // Read at last, having computed meanwhile: progress, not a hang.
  EXPECT_FALSE(w.observe(t0 + seconds(21), hung(5'000), true));
}

TEST(HangWatch, RanksWithoutPythonFramesAreJudgedByCpuAndSayWhy) {
  HangWatch w(seconds(10), 100);
  auto native = [](unsigned long long cpu) {
    auto r = hung(cpu);
    for (auto& x : r) {
      x.stacks.no_python = NoStacks{NoPython::debug_build, "a debug build of Python 3.11"};
      x.stacks.threads[0].frames.clear();
      x.stacks.threads[0].kernel = KernelThread{x.stacks.pid, "python3", 'S', 0, "futex", 202};
    }
    return r;
  };
  const auto t0 = Clock::time_point{};
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(w.observe(t0 + seconds(i), native(100ull * i), true));
  std::optional<HangVerdict> v;
  for (int i = 10; i <= 20 && !v; ++i) v = w.observe(t0 + seconds(i), native(900), true);
  ASSERT_TRUE(v.has_value());
  EXPECT_NE(v->summary.find("ranks 0-3: main thread sleeping in futex"), std::string::npos)
      << v->summary;
  EXPECT_NE(v->summary.find("no Python frames (debug_build)"), std::string::npos) << v->summary;
}

}  // namespace
}  // namespace dp::stacks::hang_watch_test
