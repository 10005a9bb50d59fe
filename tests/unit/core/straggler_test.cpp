// The straggler rule (dp/straggler.hpp) on simulated steps: each rank works
// its step's time, the collective's end waits for the last one, and a look
// every 100 ms sees each rank waiting or not, as the node agents' looks do;
// 5 s blocks of looks feed the watch. A slow rank and a slow node are named
// within a minute, right rank and node, and their recovery said; healthy
// steps, uniform jitter, a one-off pause and rank 0's checkpoint are never
// named, over five minutes and many seeds. Recorded blocks of real steps:
// straggler_fixtures_test.cpp.
#include "dp/straggler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>

namespace dp::straggler {
namespace {

constexpr int kWorld = 4;
constexpr double kLookEvery = 0.1, kBlockSeconds = 5;

std::string host_of(int rank) { return rank < 2 ? "n1" : "n2"; }

// How long `rank` works in the step that starts at `t` (seconds), drawn by `rng`.
using Work = std::function<double(int rank, double t, std::mt19937& rng)>;

// A step of `seconds` simulated: each step lasts as long as its slowest
// rank's work (plus 1 ms for the collective); a look every 100 ms sees a
// rank waiting once its own work is done. Returns the watch's verdicts.
std::vector<Verdict> simulate(const Work& work, double seconds, unsigned seed,
                              Settings settings = {}) {
  std::mt19937 rng(seed);
  Watch w(settings);
  std::vector<Verdict> out;
  std::vector<double> looks(kWorld), waits(kWorld);
  double t = 0, next_look = kLookEvery, next_block = kBlockSeconds;
  while (t < seconds) {
    std::vector<double> done(kWorld);
    double end = 0;
    for (int r = 0; r < kWorld; ++r) end = std::max(end, done[r] = t + work(r, t, rng));
    end += 0.001;
    for (; next_look < end; next_look += kLookEvery) {
      for (int r = 0; r < kWorld; ++r) {
        looks[r] += 1;
        waits[r] += next_look >= done[r] ? 1 : 0;
      }
      if (next_look + 1e-9 < next_block) continue;
      Block b{next_block, kBlockSeconds, {}};
      for (int r = 0; r < kWorld; ++r) {
        b.ranks.push_back({r, host_of(r), waits[r] / looks[r], looks[r], 0.5, "", {}});
        looks[r] = waits[r] = 0;
      }
      if (auto v = w.observe(b)) out.push_back(*v);
      next_block += kBlockSeconds;
    }
    t = end;
  }
  return out;
}

double jitter(std::mt19937& rng, double base, double spread) {
  return base * std::uniform_real_distribution<double>(1 - spread, 1 + spread)(rng);
}

// 100 ms steps, every rank alike but for 5 % of noise; `slow` ranks take
// `factor` times as long from `from` to `until`.
Work slowed(std::vector<int> slow, double factor, double from, double until = 1e9) {
  return [=](int r, double t, std::mt19937& rng) {
    const bool is_slow = std::find(slow.begin(), slow.end(), r) != slow.end();
    return jitter(rng, 0.1, 0.05) * (is_slow && t >= from && t < until ? factor : 1.0);
  };
}

TEST(StragglerWatch, ASlowRankIsNamedWithinAMinuteThenItsRecovery) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    // Rank 3 takes 25 % longer per step from 60 s to 180 s: the others wait 20 % of the time.
    const auto v = simulate(slowed({3}, 1.25, 60, 180), 300, seed);
    ASSERT_EQ(v.size(), 2u) << "seed " << seed << ": " << (v.empty() ? "" : v[0].line);
    EXPECT_EQ(v[0].change, Change::named);
    EXPECT_EQ(v[0].ranks, std::vector<int>{3});
    EXPECT_EQ(v[0].hosts, std::vector<std::string>{"n2"});
    EXPECT_EQ(v[0].others, (std::vector<int>{0, 1, 2}));
    EXPECT_LE(v[0].at_s, 120) << "named more than 60 s after the slowdown: " << v[0].line;
    EXPECT_NEAR(v[0].lead, 0.2, 0.05) << v[0].line;
    EXPECT_NEAR(v[0].since_s, 60, 5) << v[0].line;
    EXPECT_EQ(v[1].change, Change::recovered);
    EXPECT_EQ(v[1].ranks, std::vector<int>{3});
    EXPECT_LE(v[1].at_s, 240) << "recovered more than 60 s after: " << v[1].line;
  }
}

// A new watch fed 5 s blocks 1..last of 4 ranks, rank_at(r) each, until its first verdict.
std::optional<Verdict> first_verdict(int last, const std::function<RankShare(int r)>& rank_at) {
  Watch w;
  std::optional<Verdict> v;
  for (int b = 1; b <= last && !v; ++b) {
    Block blk{5.0 * b, 5, {}};
    for (int r = 0; r < 4; ++r) blk.ranks.push_back(rank_at(r));
    v = w.observe(blk);
  }
  return v;
}

TEST(StragglerWatch, TheLineSaysWhoWhoWaitsHowMuchWhereAndSince) {
  const auto v = first_verdict(8, [](int r) -> RankShare {
    if (r == 3) return {r, host_of(r), 0.0, 50, 0.635, "", {}};
    return {r, host_of(r), 0.21, 50, 0.5, "all_reduce at train.py:122", {}};
  });
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->line,
            "rank 3 (n2) \u2014 ranks 0-2 wait for it 21 % of the time (in all_reduce at "
            "train.py:122); it computes 1.27x the median; since 0 s");
}

TEST(StragglerWatch, ASlowNodeIsNamedAsItsRanks) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const auto v = simulate(slowed({2, 3}, 1.25, 30), 150, seed);
    ASSERT_EQ(v.size(), 1u) << "seed " << seed;
    EXPECT_EQ(v[0].ranks, (std::vector<int>{2, 3}));
    EXPECT_EQ(v[0].hosts, std::vector<std::string>{"n2"});
    EXPECT_EQ(v[0].line.substr(0, 15), "ranks 2-3 (n2) ") << v[0].line;
    EXPECT_LE(v[0].at_s, 90);
  }
}

// Rank 1 takes rank 3's place at 100 s: rank 1 is named as the change
// before a whole window without rank 3 has passed (a recovery needs one),
// and nothing is said of rank 3 in between.
TEST(StragglerWatch, AnotherRankTakingOverIsNamedAsTheChange) {
  Work w = [](int r, double t, std::mt19937& rng) {
    const int slow = t < 100 ? 3 : 1;
    return jitter(rng, 0.1, 0.05) * (r == slow ? 1.3 : 1.0);
  };
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const auto v = simulate(w, 200, seed);
    ASSERT_EQ(v.size(), 2u) << "seed " << seed << ": " << v.back().line;
    EXPECT_EQ(v[0].ranks, std::vector<int>{3});
    EXPECT_EQ(v[1].change, Change::changed);
    EXPECT_EQ(v[1].ranks, std::vector<int>{1});
    EXPECT_EQ(v[1].hosts, std::vector<std::string>{"n1"});
    EXPECT_NEAR(v[1].since_s, 100, 5);
    EXPECT_LE(v[1].at_s, 160);
  }
}

// A straggler that stays behind in bursts (an input pipeline that catches
// up, then falls behind again): from 120 s rank 2 takes twice as long for 5 s
// of every 15, the others waiting for it a sixth of the time. The median of
// its leads over a window is 0 (4 blocks of 6 without), but it is behind in
// two of every window's blocks: never called recovered.
TEST(StragglerWatch, AStragglerStillBehindIsNotRecovered) {
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Work w = [](int r, double t, std::mt19937& rng) {
      const double slow = t < 30 ? 1.0 : t < 120 ? 1.3 : std::fmod(t, 15) < 5 ? 2.0 : 1.0;
      return jitter(rng, 0.1, 0.05) * (r == 2 ? slow : 1.0);
    };
    const auto v = simulate(w, 400, seed);
    ASSERT_FALSE(v.empty()) << "seed " << seed;
    EXPECT_EQ(v[0].ranks, std::vector<int>{2});
    for (const auto& x : v)
      EXPECT_NE(x.change, Change::recovered) << "seed " << seed << ": " << x.line;
  }
}

TEST(StragglerWatch, ASecondRankJoiningIsAChange) {
  Work w = [](int r, double t, std::mt19937& rng) {
    const bool slow = r == 3 || (r == 1 && t >= 100);
    return jitter(rng, 0.1, 0.05) * (slow ? 1.3 : 1.0);
  };
  const auto v = simulate(w, 200, 7);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].ranks, std::vector<int>{3});
  EXPECT_EQ(v[1].change, Change::changed);
  EXPECT_EQ(v[1].ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(v[1].hosts, (std::vector<std::string>{"n1", "n2"}));
}

// The controls: five minutes each, 50 seeds, never a verdict.
void expect_never_named(const Work& work, const char* what) {
  for (unsigned seed = 1; seed <= 50; ++seed) {
    const auto v = simulate(work, 300, seed);
    EXPECT_TRUE(v.empty()) << what << ", seed " << seed << ": " << v.front().line;
  }
}

TEST(StragglerWatch, HealthyStepsAreNeverNamed) {
  expect_never_named(slowed({}, 1, 0), "every rank equal");
}

TEST(StragglerWatch, UniformJitterIsNeverNamed) {
  // Each rank's step time varies by +-30 % at random, every rank alike.
  expect_never_named([](int, double, std::mt19937& rng) { return jitter(rng, 0.1, 0.3); },
                     "+-30 % jitter");
}

// `rank` adds `extra` seconds to its first step after each multiple of `every` s (from `every`).
Work now_and_then(int rank, double extra, double every, double until = 1e9) {
  auto next = std::make_shared<double>(every);
  return [=](int r, double t, std::mt19937& rng) {
    double w = jitter(rng, 0.1, 0.05);
    if (r == rank && t >= *next && t < until) {
      w += extra;
      *next += every;
    }
    return w;
  };
}

TEST(StragglerWatch, AOneOffPauseIsNotNamed) {
  // Rank 1 stops for 8 s once, at 100 s.
  for (unsigned seed = 1; seed <= 50; ++seed) {
    const auto v = simulate(now_and_then(1, 8, 100, 101), 300, seed);
    EXPECT_TRUE(v.empty()) << "a pause of 8 s, seed " << seed << ": " << v.front().line;
  }
}

TEST(StragglerWatch, RankZerosCheckpointIsNotNamed) {
  // Rank 0 saves for 3 s every 30 s: the others wait 10 % of the time, in bursts.
  for (unsigned seed = 1; seed <= 50; ++seed) {
    const auto v = simulate(now_and_then(0, 3, 30), 300, seed);
    EXPECT_TRUE(v.empty()) << "rank 0's checkpoint, seed " << seed << ": " << v.front().line;
  }
}

// Half the ranks may straggle (one node of two); more than half are the many, not the few.
std::optional<Verdict> slow_ranks(std::vector<int> slow) {
  return first_verdict(10, [&](int r) -> RankShare {
    const bool is_slow = std::find(slow.begin(), slow.end(), r) != slow.end();
    return {r, "n" + std::to_string(r + 1), is_slow ? 0.0 : 0.3, 50, {}, "", {}};
  });
}

TEST(StragglerWatch, HalfTheRanksButNoMore) {
  const auto two = slow_ranks({1, 3});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(two->line.substr(0, 22), "ranks 1,3 (n2, n4) \u2014") << two->line;
  EXPECT_FALSE(slow_ranks({0, 1, 3}).has_value());
}

TEST(StragglerWatch, ThinEvidenceAndAbsentRanksAreNoEvidence) {
  Watch w;
  for (int b = 1; b <= 10; ++b) {
    Block blk{5.0 * b, 5, {}};
    for (int r = 0; r < 3; ++r) blk.ranks.push_back({r, "n1", 0.3, 50, {}, "", {}});
    blk.ranks.push_back({3, "n2", 0.0, 5, {}, "", {}});  // 5 looks: a stopped rank, a late node
    EXPECT_FALSE(w.observe(blk)) << "block " << b;
  }
  EXPECT_TRUE(w.history().back().ranks.size() == 3u);
}

TEST(StragglerWatch, ExactSharesNeedNoLooks) {
  const auto v = first_verdict(6, [](int r) -> RankShare {
    return {r, host_of(r), r == 2 ? 0.05 : 0.4, kExact, {}, "", {}};
  });
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->ranks, std::vector<int>{2});
  EXPECT_FALSE(v->cpu_ratio.has_value());
  EXPECT_EQ(v->line, "rank 2 (n2) \u2014 ranks 0-1,3 wait for it 35 % of the time; since 0 s");
}

TEST(StragglerWatch, ANamedRankNotJudgedIsNoRecovery) {
  Watch w;
  for (int b = 1; b <= 6; ++b) {
    Block blk{5.0 * b, 5, {}};
    for (int r = 0; r < 4; ++r)
      blk.ranks.push_back({r, host_of(r), r == 3 ? 0.0 : 0.3, 50, {}, "", {}});
    w.observe(blk);
  }
  ASSERT_TRUE(w.named());
  // Rank 3's node stops answering (or the step ends): no recovery is said.
  for (int b = 7; b <= 20; ++b) {
    Block blk{5.0 * b, 5, {}};
    for (int r = 0; r < 3; ++r) blk.ranks.push_back({r, host_of(r), 0.0, 50, {}, "", {}});
    EXPECT_FALSE(w.observe(blk)) << "block " << b;
  }
  EXPECT_TRUE(w.named());
}

}  // namespace
}  // namespace dp::straggler
