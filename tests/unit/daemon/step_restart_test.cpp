// A restarting step's part alone (step_restart.hpp): what goes to the node
// agents (START, a repeat, DONE), which nodes take part, and whom a loss
// names when an agent is gone unheard or a spare leaves. A roster of 2
// nodes x 2 tasks and 1 spare, plain peers and a Liveness; no broker.
#include "step_restart.hpp"

#include <gtest/gtest.h>

namespace dp::daemon {
namespace {

const Clock::time_point kRestartT0 = Clock::time_point{} + std::chrono::hours(1);

class StepRestartTest : public ::testing::Test {
 protected:
  // 3 nodes, the last a spare.
  StepRestartTest() { rs_.roster = initial_roster(3, 1, 2, 3); }
  // A ready node agent for node index `node` on conn node + 1.
  void agent(int node, const std::string& host) {
    Peer p;
    p.state = PeerState::ready;
    p.role = proto::ROLE_NODE;
    p.node = node;
    p.host = host;
    peers_.emplace(static_cast<ConnId>(node + 1), p);
  }
  StepRestart rs_;
  Liveness live_{4, std::chrono::milliseconds(10'000), kRestartT0};
  StepPeers peers_{live_};
};

TEST_F(StepRestartTest, StartNamesTheNodeRankItsRanksAndTheGeneration) {
  rs_.roster.restarts = 1;
  const proto::Restart s = rs_.start_push(1);
  EXPECT_EQ(s.phase(), proto::Restart::START);
  EXPECT_EQ(s.node_rank(), 1);
  EXPECT_EQ(s.restart_count(), 1u);
  EXPECT_EQ(s.generation(), rs_.machine.generation());
  EXPECT_EQ(std::vector<int>(s.node_ranks().begin(), s.node_ranks().end()),
            (std::vector<int>{2, 3}));
  EXPECT_EQ(restart_push(s).id(), 0u) << "a push";
  EXPECT_EQ(restart_push(s).restart().node_rank(), 1);
  EXPECT_EQ(rs_.done_push().phase(), proto::Restart::DONE);
}

TEST_F(StepRestartTest, AnAgentBackWhileItsNodeIsWaitedForIsToldAgain) {
  EXPECT_FALSE(rs_.repeat_for(0).has_value()) << "nothing under way";
  rs_.machine.begin({0, 1, 2}, kRestartT0, "restart 1: a test");
  ASSERT_EQ(rs_.machine.phase(), RestartMachine::Phase::stopping);
  const auto stop = rs_.repeat_for(1);
  ASSERT_TRUE(stop.has_value());
  EXPECT_EQ(stop->phase(), proto::Restart::STOP);
  EXPECT_EQ(stop->generation(), rs_.machine.generation());
  EXPECT_FALSE(rs_.repeat_for(-1).has_value());
  for (int node : {0, 1, 2}) rs_.machine.stopped(node, rs_.machine.generation(), kRestartT0);
  rs_.machine.starting({0, 1}, kRestartT0);
  ASSERT_EQ(rs_.machine.phase(), RestartMachine::Phase::starting);
  const auto start = rs_.repeat_for(1);
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(start->phase(), proto::Restart::START);
  EXPECT_EQ(start->node_rank(), 1);
  EXPECT_FALSE(rs_.repeat_for(2).has_value()) << "the spare is not started";
}

TEST_F(StepRestartTest, OnlyReadyAgentsWithAPlaceTakePart) {
  agent(0, "n1");
  agent(1, "n2");
  agent(2, "n3");
  Peer waiting;  // no hello yet
  waiting.role = proto::ROLE_NODE;
  waiting.node = 1;
  peers_.emplace(9, waiting);
  rs_.roster.node_rank[0] = Roster::kLost;
  EXPECT_EQ(rs_.live_nodes(peers_), (std::set<int>{1, 2}));
}

TEST_F(StepRestartTest, ANodeRankWithoutAnAgentIsLostNamingItsLastHost) {
  agent(0, "n1");
  agent(2, "n3");
  auto unnamed = rs_.unheard_node_loss(peers_, live_, {}, kRestartT0);
  ASSERT_TRUE(unnamed.has_value());
  EXPECT_EQ(unnamed->host, "node 1") << "its ranks never said hello";
  EXPECT_FALSE(unnamed->peer_closed);
  live_.connected(2, 0, "n2", kRestartT0);
  const auto lost = rs_.unheard_node_loss(peers_, live_, {1}, kRestartT0);
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->node, 1);
  EXPECT_EQ(lost->rank, 2);
  EXPECT_EQ(lost->host, "n2");
  EXPECT_TRUE(lost->peer_closed) << "its agent said goodbye";
  EXPECT_EQ(lost->how, AbortCause::How::node_lost);
  EXPECT_NE(lost->message.find("the node agent on host n2 left without its loss being heard"),
            std::string::npos);
  agent(1, "n2");
  EXPECT_FALSE(rs_.unheard_node_loss(peers_, live_, {}, kRestartT0).has_value())
      << "every node rank has its agent; the spare (node 2) needs none";
}

TEST_F(StepRestartTest, ASpareThatLeavesIsALossUntilEveryRankIsDone) {
  Peer spare;
  spare.role = proto::ROLE_NODE;
  spare.node = 2;
  spare.host = "n3";
  auto lost = rs_.spare_loss(spare);
  ASSERT_TRUE(lost.has_value());
  EXPECT_NE(lost->message.find("host n3 (a spare) lost its connection"), std::string::npos);
  EXPECT_EQ(lost->rank, -1);
  rs_.roster.node_rank[2] = 0;  // it took a lost node's place
  lost = rs_.spare_loss(spare);
  ASSERT_TRUE(lost.has_value());
  EXPECT_NE(lost->message.find("(the spare taking node rank 0)"), std::string::npos);
  EXPECT_EQ(lost->rank, 0);
  rs_.done_pushed = true;
  EXPECT_FALSE(rs_.spare_loss(spare).has_value()) << "every rank is done";
  rs_.done_pushed = false;
  rs_.roster.node_rank[2] = Roster::kLost;
  EXPECT_FALSE(rs_.spare_loss(spare).has_value()) << "lost already";
  Peer rank;
  rank.role = proto::ROLE_RANK;
  EXPECT_FALSE(rs_.spare_loss(rank).has_value());
}

TEST_F(StepRestartTest, TheEndOfALostNodesTasksSaysWhy) {
  rs_.roster.restarts = 1;
  rs_.roster.node_rank[0] = Roster::kLost;
  EXPECT_EQ(rs_.lost_nodes_done().message,
            "the step completed after 1 restart(s); 1 lost node(s) still hold tasks in Slurm's "
            "eyes");
}

}  // namespace
}  // namespace dp::daemon
