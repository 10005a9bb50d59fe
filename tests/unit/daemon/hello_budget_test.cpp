// Connections without hello, per source address: a stranger's flood evicts
// its own connections, never a node of the step within its share, and each
// eviction says how many connections without hello came from where.
#include "hello_budget.hpp"

#include <gtest/gtest.h>

#include "broker_fixture.hpp"
#include "step_nodes.hpp"

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture

// A stranger a quarter of the budget; a node the budget and its own: one
// agent, or its ranks when they connect themselves.
TEST(HelloBudget, CapsFollowTheBudgetAndWhoConnectsFromANode) {
  const auto agents = HelloBudget::caps_for(64, true, 4, 32);
  EXPECT_EQ(agents.per_stranger, 16);
  EXPECT_EQ(agents.per_node, 65);
  const auto ranks = HelloBudget::caps_for(64, false, 4, 30);
  EXPECT_EQ(ranks.per_node, 64 + 8) << "30 ranks on 4 nodes: 8 from the fullest";
  const auto tiny = HelloBudget::caps_for(0, false, 0, 0);
  EXPECT_EQ(tiny.per_stranger, 1);
  EXPECT_EQ(tiny.per_node, 2);
}

TEST(HelloBudget, AStrangerPastItsCapLosesItsOwnOldest) {
  HelloBudget b;
  b.set_caps({2, 4});
  b.set_step_nodes({"10.0.0.1"});
  b.add(1, "10.0.0.1");
  b.add(2, "10.0.0.9");
  b.add(3, "10.0.0.9");
  EXPECT_FALSE(b.next_eviction(100));
  b.add(4, "10.0.0.9");
  EXPECT_EQ(b.next_eviction(100), ConnId{2});
  b.remove(2);
  EXPECT_FALSE(b.next_eviction(100));
  EXPECT_EQ(b.count("10.0.0.9"), 2);
}

TEST(HelloBudget, PastTheWholeBudgetTheLargestStrangerLosesNeverANodeWithinItsShare) {
  HelloBudget b;
  b.set_caps({3, 4});
  b.set_step_nodes({"10.0.0.1", "10.0.0.2"});
  b.add(1, "10.0.0.1");
  b.add(2, "10.0.0.2");
  b.add(3, "10.0.0.2");
  b.add(10, "10.0.0.8");
  b.add(11, "10.0.0.9");
  b.add(12, "10.0.0.9");
  EXPECT_EQ(b.next_eviction(5), ConnId{11});  // 10.0.0.9 holds the most strangers' connections
  b.remove(11);
  EXPECT_FALSE(b.next_eviction(5));
  b.remove(12);
  b.remove(10);
  b.add(13, "10.0.0.2");
  EXPECT_FALSE(b.next_eviction(1)) << "nodes within their share are never evicted";
}

TEST(HelloBudget, AFloodFromANodesOwnAddressEvictsItsOldestPastItsShare) {
  HelloBudget b;
  b.set_caps({1, 3});
  b.set_step_nodes({"10.0.0.1"});
  for (ConnId c = 1; c <= 3; ++c) b.add(c, "10.0.0.1");
  EXPECT_FALSE(b.next_eviction(100));
  b.add(4, "10.0.0.1");
  EXPECT_EQ(b.next_eviction(100), ConnId{1});
}

TEST(StepNodes, AddressesAreComparedInOneForm) {
  EXPECT_EQ(canonical_address("::ffff:10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(canonical_address("10.0.0.2"), "10.0.0.2");
  EXPECT_EQ(canonical_address("fd00:0::7"), "fd00::7");
  EXPECT_EQ(canonical_address("not-an-address"), "");
  EXPECT_EQ(step_node_addresses("10.0.0.2 ::ffff:10.0.0.2,fd00::1 ", 0),
            (std::vector<std::string>{"10.0.0.2", "fd00::1"}));
}

TEST_F(BrokerTest, AStrangersFloodNeverEvictsTheStepsNodeAndEachEvictionSaysWhence) {
  BrokerConfig c = config(2);
  c.limits.max_unauthenticated = 8;  // strangers: 2 each; a node: 8 + 1
  c.limits.nodes = 2;
  c.step_nodes = {"10.0.0.1", "10.0.0.2"};
  Broker b(c, out_, t0_);
  b.on_connect(1, t0_, "10.0.0.1");  // the node agent, its hello in flight
  for (ConnId x = 10; x < 110; ++x) b.on_connect(x, t0_, "10.0.0.66");
  EXPECT_EQ(b.unauthenticated(), 3);
  EXPECT_EQ(out_.last(10).code(), proto::LIMIT);
  EXPECT_NE(out_.last(10).message().find(
                "evicted before its hello: 3 connections without hello from 10.0.0.66"),
            std::string::npos)
      << out_.last(10).message();
  b.on_frame(1, node_hello_req({0}, "n1").SerializeAsString(), t0_);
  EXPECT_EQ(out_.last(1).code(), proto::OK);
  EXPECT_FALSE(b.aborted());
}

TEST_F(BrokerTest, AFloodFromANodesOwnAddressEvictsTheNodeOnlyPastItsShare) {
  BrokerConfig c = config(2);
  c.limits.max_unauthenticated = 8;
  c.limits.nodes = 2;
  c.step_nodes = {"10.0.0.1", "10.0.0.2"};
  Broker b(c, out_, t0_);
  b.on_connect(1, t0_, "10.0.0.1");
  for (ConnId x = 10; x < 18; ++x) b.on_connect(x, t0_, "10.0.0.1");
  EXPECT_TRUE(out_.closed.empty()) << "within the node's share of 9";
  b.on_connect(18, t0_, "10.0.0.1");
  ASSERT_EQ(out_.closed, std::vector<ConnId>{1});
  EXPECT_EQ(out_.last(1).code(), proto::LIMIT);
  EXPECT_NE(out_.last(1).message().find(
                "evicted before its hello: 10 connections without hello from 10.0.0.1"),
            std::string::npos)
      << out_.last(1).message();
}

}  // namespace
}  // namespace dp::daemon
