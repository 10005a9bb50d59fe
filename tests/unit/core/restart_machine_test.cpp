// The restart machine from plain events (dp/restart_machine.hpp), and the
// logs the e2e spares tests recorded, replayed line for line.
#include "dp/restart_machine.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "fixture_files.hpp"

namespace dp {
namespace {

using namespace std::chrono_literals;
using Kind = RestartMachine::Command::Kind;
using Phase = RestartMachine::Phase;
const RestartMachine::Time t0 = RestartMachine::Time{} + 1h;

std::vector<Kind> kinds(const RestartMachine::Commands& c) {
  std::vector<Kind> out;
  for (const auto& x : c) out.push_back(x.kind);
  return out;
}

std::vector<std::string> results(const RestartMachine& m) {
  std::vector<std::string> out;
  for (const auto& l : m.lines())
    if (l.rfind("restart event", 0) != 0) out.push_back(l);
  return out;
}

// n1 lost (node 1, its agent still linked), n2 the spare: FENCE to n1, STOP to
// n0; n0 stops, but the spare's START waits for n1's programs' end.
TEST(RestartMachine, ALostNodesSpareStartsOnlyOnceItsProgramsAreDead) {
  RestartMachine m(15s);
  auto c = m.fence(1, {7, "n1", "unheard for 10000 ms", t0 + 12s}, t0);
  ASSERT_EQ(kinds(c), std::vector<Kind>{Kind::fence});
  EXPECT_EQ(c[0].generation, 1u);
  EXPECT_EQ(c[0].link, 7u);
  c = m.begin({0, 2}, t0, "restart 1: n1 lost");
  EXPECT_EQ(kinds(c), (std::vector<Kind>{Kind::stop, Kind::stop}));
  EXPECT_TRUE(m.stopped(0, 1, t0 + 10ms).empty());
  EXPECT_TRUE(m.stopped(2, 1, t0 + 20ms).empty());
  EXPECT_EQ(m.phase(), Phase::fencing);
  EXPECT_TRUE(m.tick(t0 + 1s).empty());  // nothing due: nothing logged either
  c = m.fence_answered(1, t0 + 2s);
  EXPECT_EQ(kinds(c), (std::vector<Kind>{Kind::close_link, Kind::start}));
  EXPECT_EQ(m.phase(), Phase::fencing);  // until the daemon says whom it started
  EXPECT_TRUE(m.starting({0, 2}, t0 + 2s).empty());
  EXPECT_TRUE(m.started(0, 1, t0 + 3s).empty());
  EXPECT_EQ(kinds(m.started(2, 1, t0 + 3s)), std::vector<Kind>{Kind::running});
  EXPECT_EQ(results(m), (std::vector<std::string>{
                            "restart machine: bound 15000 ms",
                            "restart generation 1: running -> stopping (restart 1: n1 lost)",
                            "restart generation 1: stopping -> fencing (every live node stopped; "
                            "waiting for n1's programs' end)",
                            "n1's programs are dead: its agent said so",
                            "restart generation 1: fencing -> starting (every program stopped)",
                            "restart generation 1: starting -> running (every node started its "
                            "programs)",
                        }));
}

TEST(RestartMachine, AnAnswerOfAnOlderGenerationCountsForNothing) {
  RestartMachine m(15s);
  m.begin({0, 1}, t0, "restart 1");
  m.stopped(0, 1, t0);
  m.begin({0, 1}, t0 + 1s, "restart 1: a further loss");  // generation 2
  const size_t logged = m.lines().size();
  EXPECT_TRUE(m.stopped(1, 1, t0 + 2s).empty());
  EXPECT_TRUE(m.started(0, 2, t0 + 2s).empty());  // not starting
  EXPECT_EQ(m.lines().size(), logged);
  EXPECT_EQ(m.phase(), Phase::stopping);
  m.stopped(0, 2, t0 + 3s);
  EXPECT_EQ(kinds(m.stopped(1, 2, t0 + 3s)), std::vector<Kind>{Kind::start});
}

TEST(RestartMachine, ANodeThatDoesNotStopInTimeIsLostAndNotWaitedFor) {
  RestartMachine m(15s);
  m.begin({0, 1}, t0, "restart 1");
  m.stopped(0, 1, t0 + 1s);
  EXPECT_TRUE(m.tick(t0 + 14s).empty());
  auto c = m.tick(t0 + 15s);
  ASSERT_EQ(kinds(c), std::vector<Kind>{Kind::lose});
  EXPECT_EQ(c[0].node, 1);
  EXPECT_EQ(c[0].why, "its node agent did not stop its programs within 15000 ms of the restart");
  EXPECT_EQ(kinds(m.left(1, t0 + 15s)), std::vector<Kind>{Kind::start});
  EXPECT_TRUE(m.left(1, t0 + 16s).empty());  // not waited for any more
}

TEST(RestartMachine, ALinkThatClosesMakesTheFenceDueAfterTheKeepersReaction) {
  RestartMachine m(15s);
  m.fence(1, {7, "n1", "unheard", t0 + 12s}, t0);
  m.begin({}, t0, "restart 1");  // no live node: straight on, to fencing
  EXPECT_EQ(m.phase(), Phase::fencing);
  EXPECT_TRUE(m.fence_link_closed(1, t0 + 1s, 1s).empty());
  EXPECT_TRUE(m.tick(t0 + 1s + 999ms).empty());
  EXPECT_EQ(kinds(m.tick(t0 + 2s)), std::vector<Kind>{Kind::start});  // no link left to close
  EXPECT_EQ(m.lines().back(), "n1's programs are dead: its agent's link closed");
}

TEST(RestartMachine, ItsOwnLogReplaysIntoTheSameLines) {
  RestartMachine m(15s);
  m.fence(1,
          {7, "n1", "unheard for 10000 ms (site key fence_after): its agent killed them", t0 - 3s},
          t0);  // heard long ago: due at once
  m.begin({0, 2}, t0 + 1ms, "restart 1: n1 lost (node_silent: no heartbeat for 60000 ms)");
  m.stopped(0, 1, t0 + 5ms);
  m.stopped(2, 1, t0 + 6ms);
  m.starting({0, 2}, t0 + 6ms);
  m.started(0, 1, t0 + 900ms);
  m.started(2, 1, t0 + 901ms);
  auto r = replay_restart_log(m.lines());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->replayed, r->recorded);
  EXPECT_EQ(r->recorded, m.lines());
}

TEST(RestartMachine, AnUnreadableLogLineIsNamed) {
  auto r =
      replay_restart_log({"restart machine: bound 15000 ms", "restart event +5: dance node=1"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 2: unknown event 'dance'"), std::string::npos)
      << r.error().message;
  r = replay_restart_log({"restart event +5: tick"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("before the machine's bound"), std::string::npos);
  r = replay_restart_log({"restart machine: bound 1 ms", "restart event +5: begin live=x why=y"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("begin without live="), std::string::npos);
}

std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(f, l);) out.push_back(l);
  return out;
}

// Recorded by the e2e spares tests (a lost node, rank 0's node cut off, a
// failed program): fed again event by event, every line comes out as it did.
TEST(RestartMachine, RecordedRunsReplayLineForLine) {
  const auto logs = test::load_fixture_files(DP_RESTART_LOGS, [](const std::filesystem::path& p) {
    return std::make_pair(p.filename().string(), read_lines(p));
  });
  EXPECT_GE(logs.size(), 3u) << "recordings in " << DP_RESTART_LOGS;
  for (const auto& [name, lines] : logs) {
    auto r = replay_restart_log(lines);
    ASSERT_TRUE(r) << name << ": " << r.error().message;
    EXPECT_EQ(r->replayed, r->recorded) << name;
    EXPECT_GE(r->recorded.size(), 6u) << name;
  }
}

}  // namespace
}  // namespace dp
