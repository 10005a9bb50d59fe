// The node agents' requests alone (node_agents.hpp): a heartbeat hears only
// the ranks its agent holds, a rank lost becomes the step's failure through
// the Broker, Slurm's signal explains a node's loss, a hello for a rank
// already held is refused. A StepState and a recording StepEffects; no broker.
#include "node_agents.hpp"

#include "dp/step_signals.hpp"
#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

using std::chrono::milliseconds;

class NodeAgentsTest : public StepTest {
 protected:
  NodeAgents agents_{step_, effects_};
};

TEST_F(NodeAgentsTest, AHeartbeatHearsOnlyTheRanksItsAgentHolds) {
  node(1, 0, "na", {0, 1});
  node(2, 1, "nb", {2, 3});
  proto::Heartbeat hb;
  hb.add_ranks()->set_rank(1);
  hb.add_ranks()->set_rank(2);  // nb's: not na's word
  agents_.heartbeat(call(1, 0, t0_ + milliseconds(900)), hb);
  EXPECT_EQ(step_.live.slot(1).last_heard, t0_ + milliseconds(900));
  EXPECT_EQ(step_.live.slot(2).last_heard, t0_);
  EXPECT_EQ(step_.live.slot(0).last_heard, t0_);
}

TEST_F(NodeAgentsTest, ARankLostIsTheStepsFailureNamingItsExit) {
  node(1, 0, "na", {0, 1});
  proto::RankLost m;
  m.set_rank(1);
  m.set_exit_code(3);
  agents_.rank_lost(call(1, 6, t0_), m);
  ASSERT_EQ(effects_.aborts.size(), 1u);
  EXPECT_EQ(effects_.aborts[0].how, AbortCause::How::rank_lost);
  EXPECT_EQ(effects_.aborts[0].rank, 1);
  EXPECT_EQ(effects_.aborts[0].exit_code, 3);
  EXPECT_EQ(effects_.aborts[0].message,
            "rank 1 (host na) exited with code 3 without saying goodbye (reported by its node "
            "agent)");
  EXPECT_EQ(out_.last(1).code(), proto::OK);
}

TEST_F(NodeAgentsTest, ARankOfAnotherNodeIsNotThisAgentsToReportLost) {
  node(1, 0, "na", {0, 1});
  node(2, 1, "nb", {2, 3});
  proto::RankLost m;
  m.set_rank(2);
  agents_.rank_lost(call(1, 6, t0_), m);
  EXPECT_TRUE(effects_.aborts.empty());
  EXPECT_EQ(out_.last(1).code(), proto::INVALID_ARGUMENT);
}

TEST_F(NodeAgentsTest, ANodeLostJustAfterSlurmsSignalWasEndedByTheUser) {
  node(1, 0, "na", {0, 1});
  proto::StepSignal sig;
  sig.set_signal(SIGINT);
  agents_.step_signal(call(1, 0, t0_), sig);
  AbortCause lost;
  lost.how = AbortCause::How::node_lost;
  lost.host = "nb";
  agents_.explain_by_user_signal(lost, t0_ + milliseconds(200));
  EXPECT_EQ(lost.how, AbortCause::How::user_signal);
  EXPECT_EQ(lost.message,
            "the node agent on host nb ended with the step's tasks 200 ms after SIGINT from Slurm "
            "reached host na");
}

TEST_F(NodeAgentsTest, AHelloForARankAnotherAgentHoldsIsAConflict) {
  node(1, 0, "na", {0, 1});
  proto::Hello h;
  h.set_role(proto::ROLE_NODE);
  h.set_host("nb");
  h.add_node_ranks(1);
  h.add_node_ranks(2);
  auto ok = agents_.check_hello(h);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, Errc::conflict);
  EXPECT_NE(ok.error().message.find("rank 1 is already connected from host na"), std::string::npos);
}

TEST_F(NodeAgentsTest, ANodesGoodbyeSaysGoodbyeForItsRanksAndForgetsIt) {
  node(1, 0, "na", {0, 1});
  proto::Goodbye g;
  agents_.goodbye(call(1, 2, t0_), g);
  EXPECT_EQ(step_.live.goodbye_count(), 2);
  EXPECT_EQ(effects_.forgotten, std::vector<ConnId>{1});
  EXPECT_EQ(step_.nodes_left, std::set<int>{0});
  EXPECT_EQ(out_.closed, std::vector<ConnId>{1});
}

}  // namespace
}  // namespace dp::daemon::test
