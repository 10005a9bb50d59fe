// The step's connections alone (step_peers.hpp): who holds a rank, which
// agent serves a node, how a peer is named, and which old link a node
// agent's new hello takes over. Peers placed by hand (step_fixture.hpp); no broker.
#include "step_peers.hpp"

#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

BrokerConfig heard_every_ten_seconds() {
  BrokerConfig c;
  c.limits.heartbeat_timeout = std::chrono::milliseconds(10'000);
  return c;
}

class StepPeersTest : public StepTest {
 protected:
  StepPeersTest() : StepTest(4, heard_every_ten_seconds()) {}
  static proto::Hello node_hello(const std::string& host, std::vector<int> ranks, int node = -1) {
    proto::Hello h;
    h.set_role(proto::ROLE_NODE);
    h.set_host(host);
    h.set_rank(node);
    for (int r : ranks) h.add_node_ranks(r);
    return h;
  }
  StepPeers& peers_ = step_.peers;
  Liveness& live_ = step_.live;
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

TEST_F(StepPeersTest, ANodesLossNamesTheRanksThatHadNotSaidGoodbye) {
  node(1, 0, "n1", {0, 1});
  live_.disconnected(0, 1, true);
  const AbortCause c =
      peers_.node_loss(1, peers_.at(1), AbortCause::How::node_lost, "lost its link");
  EXPECT_EQ(c.how, AbortCause::How::node_lost);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.node, 0);
  EXPECT_EQ(c.message,
            "the node agent on host n1 (ranks 0-1) lost its link while rank(s) 1 had not said "
            "goodbye: the node, its agent or its network failed");
}

TEST_F(StepPeersTest, ANodeFellSilentOnlyWhenEveryRankItHoldsIs) {
  node(1, 0, "n1", {0, 1});
  EXPECT_FALSE(peers_.node_fell_silent(1, peers_.at(1), {0}));
  EXPECT_TRUE(peers_.node_fell_silent(1, peers_.at(1), {0, 1}));
  live_.disconnected(1, 1, true);
  EXPECT_TRUE(peers_.node_fell_silent(1, peers_.at(1), {0})) << "rank 1 left";
  const AbortCause c = peers_.node_silence(1, peers_.at(1), std::chrono::milliseconds(10'000));
  EXPECT_EQ(c.how, AbortCause::How::node_silent);
  EXPECT_NE(c.message.find("sent no heartbeat for 10000 ms"), std::string::npos) << c.message;
  EXPECT_NE(c.message.find("the site's heartbeat_timeout"), std::string::npos) << c.message;
  const AbortCause spare = peers_.node_silence(1, peers_.at(1), std::chrono::milliseconds(5'000));
  EXPECT_NE(spare.message.find("spare_timeout, a spare waiting"), std::string::npos);
}

TEST_F(StepPeersTest, ABarrierCallBringsItsRankOrTheAgentsLiveRanksOnce) {
  node(1, 0, "n1", {0, 1});
  proto::Barrier b;
  b.set_name("sync");
  Peer rank;
  rank.role = proto::ROLE_RANK;
  rank.rank = 3;
  EXPECT_EQ(*peers_.arriving_ranks(7, rank, b), std::vector<int>{3});
  EXPECT_FALSE(peers_.arriving_ranks(1, peers_.at(1), b).ok()) << "an agent names its ranks";
  b.add_ranks(1);
  b.add_ranks(0);
  EXPECT_EQ(*peers_.arriving_ranks(1, peers_.at(1), b), (std::vector<int>{0, 1}));
  b.add_ranks(1);
  EXPECT_NE(peers_.arriving_ranks(1, peers_.at(1), b).error().message.find("listed twice"),
            std::string::npos);
  proto::Barrier other;
  other.set_name("sync");
  other.add_ranks(2);
  EXPECT_NE(peers_.arriving_ranks(1, peers_.at(1), other)
                .error()
                .message.find("rank 2 is not a live rank of this node agent"),
            std::string::npos);
  Peer tool;
  EXPECT_NE(peers_.arriving_ranks(8, tool, other).error().message.find("only ranks take part"),
            std::string::npos);
}

}  // namespace
}  // namespace dp::daemon::test
