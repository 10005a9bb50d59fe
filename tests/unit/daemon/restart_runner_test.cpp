// Carrying out a restart alone (restart_runner.hpp): a program's failure
// stops every node and starts the programs again once all answered; a lost
// node is fenced and its place given to the spare; a lost spare is only
// counted. Three node agents placed by hand (two with ranks, one spare), a
// StepState and a recording StepEffects; no broker.
#include "restart_runner.hpp"

#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

using std::chrono::milliseconds;

BrokerConfig with_spare() {
  BrokerConfig c;
  c.limits.nodes = 3;
  c.limits.spares = 1;
  c.limits.tasks_per_node = 2;
  c.limits.max_restarts = 2;
  return c;
}

class RestartRunnerTest : public StepTest {
 protected:
  RestartRunnerTest() : StepTest(4, with_spare()) {
    node(1, 0, "na", {0, 1});
    node(2, 1, "nb", {2, 3});
    node(3, 2, "nc", {});
  }
  // The last restart push `c` got: its phase, or -1.
  int pushed(ConnId c) {
    for (auto it = out_.sent[c].rbegin(); it != out_.sent[c].rend(); ++it)
      if (it->has_restart()) return it->restart().phase();
    return -1;
  }
  void ready(ConnId c, proto::Restart::Phase phase, Clock::time_point now) {
    proto::RestartReady m;
    m.set_phase(phase);
    m.set_generation(1);
    runner_.ready(call(c, 0, now), m);
  }
  AbortCause failure(AbortCause::How how, int node, const std::string& host) {
    AbortCause c;
    c.how = how;
    c.rank = node * 2;
    c.node = node;
    c.host = host;
    c.when = t0_ + std::chrono::minutes(5);  // long after the start: not "at once"
    c.message = "rank " + std::to_string(c.rank) + " failed";
    return c;
  }
  BlockingCalls blocking_{step_};
  RestartRunner runner_{step_, blocking_, effects_};
};

TEST_F(RestartRunnerTest, AProgramsFailureStopsEveryNodeThenStartsTheProgramsAgain) {
  ASSERT_TRUE(step_.store.put(proto::SPACE_STEP, "master", "na:1"));
  AbortCause c = failure(AbortCause::How::rank_lost, 0, "na");
  ASSERT_TRUE(runner_.instead(c));
  for (ConnId n : {1, 2, 3}) EXPECT_EQ(pushed(n), proto::Restart::STOP) << "node " << n;
  const auto later = c.when + milliseconds(300);
  for (ConnId n : {1, 2}) ready(n, proto::Restart::STOP, later);
  EXPECT_EQ(pushed(1), proto::Restart::STOP) << "the spare has not answered yet";
  ready(3, proto::Restart::STOP, later);
  EXPECT_EQ(pushed(1), proto::Restart::START);
  EXPECT_EQ(pushed(2), proto::Restart::START);
  EXPECT_EQ(pushed(3), proto::Restart::STOP) << "the spare stays a spare";
  EXPECT_FALSE(step_.store.contains(proto::SPACE_STEP, "master")) << "the programs' keys go";
  EXPECT_TRUE(effects_.aborts.empty());
}

TEST_F(RestartRunnerTest, ALostNodeIsFencedAndTheSpareTakesItsRanks) {
  AbortCause c = failure(AbortCause::How::node_lost, 1, "nb");
  c.when = t0_ + milliseconds(500);  // heard at t0_: its programs are not known dead yet
  ASSERT_TRUE(runner_.instead(c));
  EXPECT_EQ(effects_.forgotten, std::vector<ConnId>{2}) << "nothing nb says counts any more";
  EXPECT_EQ(pushed(2), proto::Restart::FENCE);
  EXPECT_EQ(pushed(1), proto::Restart::STOP);
  EXPECT_EQ(pushed(3), proto::Restart::STOP);
  const auto later = c.when + milliseconds(300);
  proto::Request fenced;
  fenced.mutable_restart_ready()->set_phase(proto::Restart::FENCE);
  fenced.mutable_restart_ready()->set_generation(1);
  EXPECT_TRUE(runner_.fenced_frame(2, fenced.SerializeAsString(), later));
  EXPECT_FALSE(runner_.fenced_frame(1, fenced.SerializeAsString(), later)) << "not fenced";
  for (ConnId n : {1, 3}) ready(n, proto::Restart::STOP, later);
  EXPECT_EQ(pushed(3), proto::Restart::START) << "the spare holds the lost node's ranks";
  EXPECT_EQ(step_.peers.at(3).node_ranks, (std::vector<int>{2, 3}));
}

TEST_F(RestartRunnerTest, ALostSpareIsCountedNotRestarted) {
  AbortCause c = failure(AbortCause::How::node_lost, 2, "nc");
  c.rank = -1;
  ASSERT_TRUE(runner_.instead(c));
  for (ConnId n : {1, 2}) EXPECT_EQ(pushed(n), -1) << "node " << n;
  EXPECT_EQ(step_.report.spares_left(), 0);
}

class NoRestartTest : public StepTest {};

TEST_F(NoRestartTest, AStepWithoutSparesOrRestartsEndsInstead) {
  node(1, 0, "na", {0, 1});
  BlockingCalls blocking{step_};
  RestartRunner runner{step_, blocking, effects_};
  AbortCause c;
  c.how = AbortCause::How::node_lost;
  c.node = 0;
  EXPECT_FALSE(runner.instead(c));
  EXPECT_TRUE(out_.sent[1].empty());
}

}  // namespace
}  // namespace dp::daemon::test
