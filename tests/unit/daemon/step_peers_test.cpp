// The step's connections alone (step_peers.hpp): who holds a rank, which
// agent serves a node, how a peer is named, and which old link a node
// agent's new hello takes over. Plain peers and a Liveness; no broker.
#include "step_peers.hpp"

#include <gtest/gtest.h>

namespace dp::daemon {
namespace {

const Clock::time_point kPeersT0 = Clock::time_point{} + std::chrono::hours(1);

class StepPeersTest : public ::testing::Test {
 protected:
  // A ready node agent on `conn` for node index `node` holding `ranks`.
  void node(ConnId conn, int node, const std::string& host, std::vector<int> ranks) {
    Peer p;
    p.state = PeerState::ready;
    p.role = proto::ROLE_NODE;
    p.host = host;
    p.node = node;
    p.node_ranks = ranks;
    peers_.emplace(conn, p);
    for (int r : ranks) live_.connected(r, conn, host, kPeersT0);
  }
  static proto::Hello node_hello(const std::string& host, std::vector<int> ranks, int node = -1) {
    proto::Hello h;
    h.set_role(proto::ROLE_NODE);
    h.set_host(host);
    h.set_rank(node);
    for (int r : ranks) h.add_node_ranks(r);
    return h;
  }
  Liveness live_{4, std::chrono::milliseconds(10'000), kPeersT0};
  StepPeers peers_{live_};
};

TEST_F(StepPeersTest, ANodeAgentHoldsItsRanksUntilEachLeaves) {
  node(1, 0, "n1", {0, 1});
  EXPECT_TRUE(peers_.holds(1, 0));
  EXPECT_FALSE(peers_.holds(2, 0));
  EXPECT_FALSE(peers_.holds(1, 4)) << "beyond the world";
  EXPECT_FALSE(peers_.holds(1, -1));
  EXPECT_TRUE(peers_.holds_ranks(1, peers_.at(1)));
  live_.disconnected(0, 1, true);
  EXPECT_FALSE(peers_.holds(1, 0));
  EXPECT_TRUE(peers_.holds_ranks(1, peers_.at(1))) << "rank 1 is still there";
  live_.disconnected(1, 1, true);
  EXPECT_FALSE(peers_.holds_ranks(1, peers_.at(1)));
}

TEST_F(StepPeersTest, APeerBeforeHelloHoldsNothing) {
  Peer p;
  p.role = proto::ROLE_RANK;
  p.rank = 2;
  peers_.emplace(5, p);
  EXPECT_FALSE(peers_.holds_ranks(5, peers_.at(5)));
}

TEST_F(StepPeersTest, PeersAndRanksAreNamedForTheLines) {
  node(1, 0, "n1", {0, 1});
  Peer rank;
  rank.role = proto::ROLE_RANK;
  rank.rank = 3;
  rank.host = "n2";
  Peer tool;
  EXPECT_EQ(peers_.describe_peer(peers_.at(1)), "the node agent on host n1");
  EXPECT_EQ(peers_.describe_peer(rank), "rank 3 (host n2)");
  EXPECT_EQ(peers_.describe_peer(tool), "an agent on host ?");
  EXPECT_EQ(peers_.describe_rank(1), "rank 1 (host n1, via its node agent)");
  EXPECT_EQ(peers_.describe_rank(3), "rank 3 (host ?)");
}

TEST_F(StepPeersTest, ANodesAgentAndHostByIndex) {
  node(1, 0, "n1", {0, 1});
  node(2, 1, "n2", {2, 3});
  EXPECT_EQ(peers_.node_conn(1), 2u);
  EXPECT_EQ(peers_.node_conn(1, 2), 0u) << "except itself";
  EXPECT_EQ(peers_.node_host(0), "n1");
  EXPECT_EQ(peers_.node_host(7), "node 7");
}

TEST_F(StepPeersTest, AHelloWithTheSameHostAndRanksTakesOverTheLiveLink) {
  node(1, 0, "n1", {0, 1});
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {0, 1}), 9, false), 1u);
  EXPECT_EQ(peers_.node_predecessor(node_hello("n9", {0, 1}), 9, false), 0u) << "another host";
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {0}), 9, false), 0u) << "other ranks";
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {2, 3}), 9, false), 0u)
      << "ranks nobody holds";
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {7}), 9, false), 0u) << "beyond the world";
}

// A step that restarts moves ranks between nodes: its agents are known by node index.
TEST_F(StepPeersTest, ARestartingStepKnowsItsNodesByIndex) {
  node(1, 0, "n1", {0, 1});
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {2, 3}, 0), 9, true), 1u);
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {0, 1}, 1), 9, true), 0u) << "another index";
  EXPECT_EQ(peers_.node_predecessor(node_hello("n2", {0, 1}, 0), 9, true), 0u) << "another host";
  EXPECT_EQ(peers_.node_predecessor(node_hello("n1", {0, 1}, 0), 1, true), 0u)
      << "a connection is never its own predecessor";
}

}  // namespace
}  // namespace dp::daemon
