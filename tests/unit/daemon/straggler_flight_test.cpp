// The flight recorders as the straggler verdict's source (issue 57): dumps
// of two NCCL steps in PyTorch's format (tests/fixtures/flight_recorder,
// straggle.py), each cut at every 5 s block's end as the node agent's read
// then would see it, fed to the daemon's report as the stacks rounds feed
// it. A rank whose collectives start late is named, by the recorders, with
// the rank that waits for it; a balanced step (jitter alike, a checkpoint
// once) is not.
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "straggler_report.hpp"

namespace dp::daemon {
namespace {

using Source = StragglerReport::Source;
constexpr int64_t kT0 = 1'795'705'400'000'000'000, kBlockNs = 5'000'000'000;

stacks::FlightDump flight_fixture(const std::string& name) {
  std::ifstream in(std::string(DP_FLIGHT_FIXTURES) + "/" + name + ".pickle", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  auto d = stacks::read_flight_dump(s.str());
  EXPECT_TRUE(d) << name << ": " << (d ? "" : d.error().message);
  return d ? *d : stacks::FlightDump{};
}

// Rank `rank` as its agent reads it at `at_ns`: what it enqueued by then, the
// collectives not done by then still running (no GPU time yet), the newest `most`.
stacks::RankFlight read_at(const stacks::FlightDump& d, int rank, int64_t at_ns, size_t most) {
  stacks::FlightDump cut = d;
  cut.entries.clear();
  for (auto e : d.entries) {
    if (e.created_ns >= at_ns) break;
    if (e.completed_ns && *e.completed_ns > at_ns) {
      e.state = "started";
      e.completed_ns.reset();
      e.duration_ms.reset();
    }
    cut.entries.push_back(e);
  }
  stacks::RankFlight r;
  r.rank = rank;
  r.host = rank == 0 ? "n1" : "n2";
  r.pid = 4100 + rank;
  r.groups = stacks::group_places(cut, at_ns);
  r.arrivals = stacks::recent_arrivals(cut, most);
  return r;
}

struct Replay {
  std::vector<StragglerReport::Said> said;
  nlohmann::ordered_json json;
};

// The step's 60 s, one read of both ranks per block; `change` edits the dumps first.
Replay replay(const std::string& step, size_t most = 64,
              const std::function<void(stacks::FlightDump&, stacks::FlightDump&)>& change = {}) {
  auto d0 = flight_fixture(step + "_rank0"), d1 = flight_fixture(step + "_rank1");
  if (change) change(d0, d1);
  StragglerReport report(straggler::Settings{}, 100, 2);
  Replay run;
  for (int k = 1; k <= 12; ++k) {
    const int64_t at = kT0 + k * kBlockNs;
    report.on_flights({read_at(d0, 0, at, most), read_at(d1, 1, at, most)});
    for (auto& s : report.end_block(5.0 * k, 5.0, false)) run.said.push_back(std::move(s));
  }
  run.json = report.json(false);
  return run;
}

std::optional<straggler::Verdict> first_heard(const Replay& r) {
  for (const auto& s : r.said)
    if (s.heard && s.source == Source::flight) return s.verdict;
  return std::nullopt;
}

TEST(StragglerFlight, ARankWhoseCollectivesStartLateIsNamedByTheRecorders) {
  const Replay r = replay("late");
  const auto v = first_heard(r);
  ASSERT_TRUE(v) << r.json.dump();
  EXPECT_EQ(v->change, straggler::Change::named);
  EXPECT_EQ(v->ranks, std::vector<int>{1});
  EXPECT_EQ(v->hosts, std::vector<std::string>{"n2"});
  EXPECT_EQ(v->others, std::vector<int>{0});
  // Rank 0 waits 100 ms of each 506 ms step on its GPU: 19.8 %.
  EXPECT_NEAR(v->lead, 0.198, 0.01);
  EXPECT_LE(v->at_s, 30.0) << "within 60 s of the slowdown's start";
  EXPECT_EQ(v->line.rfind("rank 1 (n2) \u2014 rank 0 waits for it 20 % of the time", 0), 0u)
      << v->line;
  EXPECT_EQ(r.said.size(), 1u) << "named once, nothing else said";
  EXPECT_EQ(r.json["judged_by"], "flight");
  EXPECT_EQ(r.json["named"], v->line);
  EXPECT_EQ(r.json["flight"]["history"].back()["ranks"][0]["looks"], nullptr) << "exact";
}

TEST(StragglerFlight, ABalancedStepIsNotNamed) {
  const Replay r = replay("balanced");
  EXPECT_TRUE(r.said.empty()) << r.said.front().verdict.line;
  EXPECT_EQ(r.json["judged_by"], "flight");
  EXPECT_GE(r.json["flight"]["history"].size(), 10u) << "judged, not unheard";
}

// A dump holding fewer collectives than a block's (the agent sends the
// newest 64; here 8 of 20): the share over the span they cover.
TEST(StragglerFlight, DumpsShorterThanABlockStillName) {
  const auto v = first_heard(replay("late", 8));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->ranks, std::vector<int>{1});
  EXPECT_NEAR(v->lead, 0.198, 0.03);
  EXPECT_TRUE(replay("balanced", 8).said.empty());
}

// Without TORCH_NCCL_ENABLE_TIMING (no GPU times): who enqueued last, by how
// much; rank 1 enqueues each all_reduce 100 ms after rank 0.
TEST(StragglerFlight, WithoutGpuTimesTheLateEnqueueIsNamed) {
  const auto untimed = [](stacks::FlightDump& a, stacks::FlightDump& b) {
    for (auto* d : {&a, &b})
      for (auto& e : d->entries) e.duration_ms.reset();
  };
  const auto v = first_heard(replay("late", 64, untimed));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->ranks, std::vector<int>{1});
  EXPECT_TRUE(replay("balanced", 64, untimed).said.empty());
}

// A rank slow on its GPU enqueues on time (its CPU does not wait for its
// kernels): only the GPU times tell, and they name it.
TEST(StragglerFlight, ARankSlowOnItsGpuIsNamedFromTheGpuTimes) {
  const auto same_enqueue = [](stacks::FlightDump& a, stacks::FlightDump& b) {
    for (size_t i = 0; i < a.entries.size() && i < b.entries.size(); ++i)
      b.entries[i].created_ns = a.entries[i].created_ns;
  };
  const auto v = first_heard(replay("late", 64, same_enqueue));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->ranks, std::vector<int>{1});
  EXPECT_NEAR(v->lead, 0.198, 0.01);
}

}  // namespace
}  // namespace dp::daemon
