// The flight recorder's dumps of a real NCCL hang (tests/fixtures/flight_recorder:
// torch 2.11, NCCL 2.28.9, world 2 on one H100; rank 0 waits in all_reduce #22
// of group 0, rank 1 stopped at #21): read, placed, judged, merged.
#include "dp/stacks/flight_recorder.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"

namespace dp::stacks::flight_recorder_test {
namespace {

using std::chrono::seconds;

std::string dump_bytes(int rank) {
  return fixtures::fixture_text("../flight_recorder/hung_rank" + std::to_string(rank) + ".pickle");
}

FlightDump dump(int rank) {
  auto d = read_flight_dump(dump_bytes(rank));
  EXPECT_TRUE(d) << d.error().message;
  return d ? *d : FlightDump{};
}

// When rank 0 enqueued all_reduce #22, on its clock.
int64_t hung_since_ns() { return dump(0).entries.back().created_ns; }

// Rank `rank` as its agent read it on `host`, dumped `after` the hang began.
RankFlight read_rank(int rank, const std::string& host, int pid, seconds after, int as = -1) {
  const FlightDump d = dump(rank);
  RankFlight r;
  r.rank = as < 0 ? rank : as;
  r.host = host;
  r.pid = pid;
  r.groups = group_places(d, hung_since_ns() + std::chrono::nanoseconds(after).count());
  r.arrivals = recent_arrivals(d, 64);
  return r;
}

TEST(FlightRecorder, ReadsTheDumpsOfARealHang) {
  const FlightDump d0 = dump(0), d1 = dump(1);
  EXPECT_EQ(d0.version, "2.10");
  EXPECT_EQ(d0.comm_version, "2.28.9");
  ASSERT_EQ(d0.entries.size(), 23u);
  ASSERT_EQ(d1.entries.size(), 22u);
  const FlightEntry& last = d0.entries.back();
  EXPECT_EQ(last.group, "0");
  EXPECT_EQ(last.seq, 22);
  EXPECT_EQ(last.op, "all_reduce");
  EXPECT_EQ(last.state, "scheduled");
  EXPECT_FALSE(last.completed_ns);
  EXPECT_EQ(d0.entries[20].op, "broadcast");
  EXPECT_EQ(d0.entries[21].group, "1");
  ASSERT_EQ(d0.groups.size(), 2u);
  EXPECT_EQ(d0.groups[0].name, "0");
  EXPECT_EQ(d0.groups[0].desc, "default_pg");
  EXPECT_EQ(d0.groups[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d0.groups[0].last_enqueued, 22);
  EXPECT_EQ(d0.groups[0].last_completed, 21);
  EXPECT_EQ(d1.groups[0].last_enqueued, 21);
  EXPECT_EQ(d1.groups[1].last_enqueued, 1);
}

TEST(FlightRecorder, PlacesEachRankInEachGroup) {
  const auto p0 = group_places(dump(0), hung_since_ns() + 30'000'000'000);
  ASSERT_EQ(p0.size(), 2u);
  EXPECT_TRUE(p0[0].pending);
  EXPECT_EQ(p0[0].op, "all_reduce");
  EXPECT_EQ(p0[0].age_ms, 30'000);
  EXPECT_FALSE(p0[1].pending);  // the subgroup's all_reduce completed
  const auto p1 = group_places(dump(1), hung_since_ns() + 30'000'000'000);
  EXPECT_FALSE(p1[0].pending);
  EXPECT_EQ(p1[0].op, "broadcast");
  EXPECT_GE(p1[0].age_ms, 30'000);  // its last was enqueued before rank 0's #22
}

TEST(FlightRecorder, NamesTheRankThatNeverEnteredAndWhereTheOthersWait) {
  const auto h = flight_hang(
      {read_rank(0, "n1", 4100, seconds(30)), read_rank(1, "n2", 4242, seconds(30))}, seconds(20));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->rank, 1);
  EXPECT_EQ(h->host, "n2");
  EXPECT_EQ(h->which, "pg 0 #22");
  EXPECT_EQ(h->message,
            "rank 1 (n2, pid 4242) never entered all_reduce #22 (process group 0); rank 0 waits "
            "in it for 30 s (rank 1 is at #21)");
}

TEST(FlightRecorder, NamesItInAWorldOfFour) {
  // Ranks 2 and 3 wait as rank 0 does: its dump read as theirs.
  std::vector<RankFlight> ranks{
      read_rank(0, "n1", 4100, seconds(31)), read_rank(1, "n2", 4242, seconds(31)),
      read_rank(0, "n3", 4300, seconds(31), 2), read_rank(0, "n4", 4400, seconds(31), 3)};
  for (auto& r : ranks)
    for (auto& g : r.groups) g.ranks = {0, 1, 2, 3};
  const auto h = flight_hang(ranks, seconds(20));
  ASSERT_TRUE(h);
  const std::string line =
      "rank 1 (n2, pid 4242) never entered all_reduce #22 (process group 0); ranks 0, 2, 3 wait "
      "in it";
  EXPECT_EQ(h->message.substr(0, line.size()), line);
  // A rank not read is named, never judged.
  ranks[3] = RankFlight{3, "n4", 4400, "its pipe is not there", {}, {}};
  const auto unread = flight_hang(ranks, seconds(20));
  ASSERT_TRUE(unread);
  EXPECT_NE(unread->message.find("ranks 0, 2 wait in it"), std::string::npos) << unread->message;
  EXPECT_NE(unread->message.find("rank 3 not read (no flight recorder: its pipe is not there)"),
            std::string::npos)
      << unread->message;
}

// A dump is the program's own text: a collective or group named to forge a
// slurm-dp: line, with terminal escapes, is shown escaped (issue 53).
TEST(FlightRecorder, ADumpsOwnNamesAreShownEscaped) {
  std::vector<RankFlight> ranks{read_rank(0, "n1", 4100, seconds(30)),
                                read_rank(1, "n2", 4242, seconds(30))};
  for (auto& r : ranks)
    for (auto& g : r.groups) {
      g.op = "all_reduce\nslurm-dp: FORGED \x1b[2J";
      g.group = "0\n\x1b]0;owned\x07";
    }
  const auto h = flight_hang(ranks, seconds(20));
  ASSERT_TRUE(h);
  EXPECT_NE(h->message.find("never entered all_reduce\\nslurm\\x2ddp\\x3a\\x20FORGED"),
            std::string::npos)
      << h->message;
  EXPECT_NE(h->message.find("(process group 0\\n\\x1b]0;owned\\x07)"), std::string::npos)
      << h->message;
  std::vector<std::string> lines = flight_lines(ranks);
  lines.push_back(h->message);
  for (const auto& l : lines)
    for (char c : l) ASSERT_TRUE(c >= 0x20 && c <= 0x7e) << l;
}

TEST(FlightRecorder, NoVerdictBeforeTheTimeoutNorWhileARankMoves) {
  EXPECT_FALSE(flight_hang({read_rank(0, "n1", 1, seconds(10)), read_rank(1, "n2", 2, seconds(10))},
                           seconds(20)));
  // Rank 1 enqueued a collective of the group within the timeout: it moves.
  auto moving = read_rank(1, "n2", 2, seconds(30));
  moving.groups[0].age_ms = 5'000;
  EXPECT_FALSE(flight_hang({read_rank(0, "n1", 1, seconds(30)), moving}, seconds(20)));
  // Every rank in the same collective, or only one rank read: nothing to name.
  EXPECT_FALSE(flight_hang(
      {read_rank(0, "n1", 1, seconds(30)), read_rank(0, "n2", 2, seconds(30), 1)}, seconds(20)));
  EXPECT_FALSE(flight_hang({read_rank(0, "n1", 1, seconds(30))}, seconds(20)));
}

TEST(FlightRecorder, ADumpStillBeingWrittenIsNamedTruncated) {
  const std::string whole = dump_bytes(0);
  auto d = read_flight_dump(whole.substr(0, whole.size() / 2));
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("truncated"), std::string::npos) << d.error().message;
  EXPECT_FALSE(read_flight_dump(std::string("\x80\x02K\x01.", 5)));  // not a dict
}

TEST(FlightRecorder, TheRankTheOthersWaitFor) {
  // The recorded ranks: 22 collectives in common, no GPU timing (enqueue times).
  const auto late =
      late_ranks({read_rank(0, "n1", 1, seconds(30)), read_rank(1, "n2", 2, seconds(30))});
  ASSERT_FALSE(late.empty());
  int last = 0;
  for (const auto& l : late) {
    EXPECT_EQ(l.seen, 22);
    last += l.last;
  }
  EXPECT_EQ(last, 22);  // each collective has one rank last
  // With GPU timing: rank 1's collectives take least (the others wait in theirs).
  std::vector<RankFlight> timed(3);
  for (int r = 0; r < 3; ++r) {
    timed[static_cast<size_t>(r)] = RankFlight{r, "n" + std::to_string(r), 0, "", {}, {}};
    for (int seq = 1; seq <= 10; ++seq)
      timed[static_cast<size_t>(r)].arrivals.push_back(
          Arrival{"0", seq, "all_reduce", 1'000'000'000LL * seq, r == 1 ? 1.0 : 51.0});
  }
  const auto by_time = late_ranks(timed);
  ASSERT_EQ(by_time.size(), 1u);
  EXPECT_EQ(by_time[0].rank, 1);
  EXPECT_EQ(by_time[0].last, 10);
  EXPECT_DOUBLE_EQ(by_time[0].late_ms, 1000.0);  // 2 ranks x 50 ms x 10
  EXPECT_EQ(late_text(by_time[0]),
            "rank 1 (n1) entered 10 of 10 collectives last, the others waited 1000.0 ms for it "
            "in all");
}

// Issue 55's input: each rank's share of a block spent waiting for the others.
TEST(FlightRecorder, WaitSharesOfABlock) {
  // 3 ranks, a collective a second for 10 s; rank 1 enqueues each 200 ms late.
  std::vector<RankFlight> ranks(3);
  for (int r = 0; r < 3; ++r) {
    ranks[static_cast<size_t>(r)] = RankFlight{r, "n" + std::to_string(r), 0, "", {}, {}};
    for (int seq = 1; seq <= 12; ++seq)
      ranks[static_cast<size_t>(r)].arrivals.push_back(
          Arrival{"0", seq, "all_reduce", 1'000'000'000LL * seq + (r == 1 ? 200'000'000 : 0),
                  std::nullopt});
  }
  auto shares = flight_wait_shares(ranks, 1'000'000'000, 11'000'000'000);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_NEAR(shares[0].waiting, 0.2, 1e-9);  // 10 x 200 ms of 10 s
  EXPECT_NEAR(shares[1].waiting, 0.0, 1e-9);
  EXPECT_NEAR(shares[2].waiting, 0.2, 1e-9);
  EXPECT_EQ(shares[0].collectives, 10);
  EXPECT_EQ(shares[1].host, "n1");
  // Timed on the GPU: rank 1's collectives take 1 ms, the others' 51 ms.
  for (auto& r : ranks)
    for (auto& a : r.arrivals) a.duration_ms = r.rank == 1 ? 1.0 : 51.0;
  shares = flight_wait_shares(ranks, 1'000'000'000, 11'000'000'000);
  EXPECT_NEAR(shares[0].waiting, 0.05, 1e-9);  // 10 x 50 ms of 10 s
  EXPECT_NEAR(shares[1].waiting, 0.0, 1e-9);
  // An unread rank and a block with no collective: no evidence.
  ranks[2].unread = "no pipe";
  EXPECT_EQ(flight_wait_shares(ranks, 1'000'000'000, 11'000'000'000).size(), 2u);
  EXPECT_TRUE(flight_wait_shares(ranks, 100'000'000'000, 110'000'000'000).empty());
}

TEST(FlightRecorder, TheViewsLinesGroupRanksByPlace) {
  std::vector<RankFlight> ranks{
      read_rank(0, "n1", 1, seconds(31)), read_rank(1, "n2", 2, seconds(31)),
      read_rank(0, "n3", 3, seconds(31), 2), RankFlight{3, "n4", 4, "no pipe", {}, {}}};
  const auto lines = flight_lines(ranks);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "flight recorder, process group 0: rank 1 done #21 (broadcast); ranks 0,2 wait in "
            "all_reduce #22 for 31 s");
  EXPECT_EQ(lines[1], "flight recorder, process group 1: ranks 0-2 done #1 (all_reduce)");
  EXPECT_EQ(lines[2], "flight recorder not read: rank 3 (no pipe)");
}

TEST(FlightRecorder, RankRangesBack) {
  EXPECT_EQ(parse_rank_ranges("0-3,8", 100), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(parse_rank_ranges("", 100), std::vector<int>{});
  EXPECT_FALSE(parse_rank_ranges("3-1", 100));
  EXPECT_FALSE(parse_rank_ranges("0-999999999", 100));
  EXPECT_FALSE(parse_rank_ranges("a", 100));
  EXPECT_FALSE(parse_rank_ranges("1,,2", 100));
}

}  // namespace
}  // namespace dp::stacks::flight_recorder_test
