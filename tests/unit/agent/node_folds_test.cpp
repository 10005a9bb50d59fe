// The node's folded calls alone (node_folds.hpp), from plain inputs: one
// upstream get for many local waiters, one barrier arrival for the node
// with the most patient rank's time, local deadlines, the bounded cache.
#include "node_folds.hpp"

#include <gtest/gtest.h>

namespace dp::agent {
namespace {

using std::chrono::milliseconds;
const NodeFolds::Clock::time_point kT0 = NodeFolds::Clock::time_point{} + std::chrono::hours(1);

TEST(NodeFolds, IdenticalGetsInFlightAreOneUpstreamGet) {
  NodeFolds f(1 << 20);
  EXPECT_TRUE(f.wait_get("master", 1, 10, 0, kT0)) << "the first: send it";
  EXPECT_FALSE(f.wait_get("master", 2, 20, 500, kT0)) << "on its way already";
  EXPECT_TRUE(f.wait_get("other", 2, 21, 0, kT0));
  const auto waiters = f.take_get("master");
  ASSERT_EQ(waiters.size(), 2u);
  EXPECT_EQ(waiters[0].id, 10u);
  EXPECT_EQ(waiters[1].id, 20u);
  EXPECT_TRUE(f.take_get("master").empty()) << "answered once";
  EXPECT_TRUE(f.wait_get("master", 3, 30, 0, kT0)) << "a later get asks again";
}

TEST(NodeFolds, TheNodesRanksArriveUpstreamOnceWithTheMostPatientRanksTime) {
  NodeFolds f(1 << 20);
  const std::vector<int32_t> ranks{4, 5};
  EXPECT_FALSE(f.arrive("init", 4, 1, 7, 2'000, ranks, kT0));
  auto up = f.arrive("init", 5, 2, 8, 500, ranks, kT0 + milliseconds(100));
  ASSERT_TRUE(up);
  EXPECT_EQ(up->barrier().name(), "init");
  EXPECT_EQ(up->barrier().timeout_ms(), 1'900u) << "rank 4 waits until 2 s after it came";
  EXPECT_EQ(std::vector<int32_t>(up->barrier().ranks().begin(), up->barrier().ranks().end()),
            ranks);
  EXPECT_EQ(f.take_barrier("init").size(), 2u);
}

TEST(NodeFolds, ABarrierWithoutDeadlinesWaitsUpstreamWithoutOne) {
  NodeFolds f(1 << 20);
  auto up = f.arrive("b", 0, 1, 1, 0, {0}, kT0);
  ASSERT_TRUE(up);
  EXPECT_EQ(up->barrier().timeout_ms(), 0u);
}

TEST(NodeFolds, LocalDeadlinesNameTheKeyOrTheRanksNotArrived) {
  NodeFolds f(1 << 20);
  const std::vector<int32_t> ranks{0, 1, 2};
  f.wait_get("k", 1, 11, 100, kT0);
  f.arrive("b", 0, 1, 12, 100, ranks, kT0);
  f.arrive("b", 1, 2, 13, 0, ranks, kT0);
  const auto rank_of = [](NodeFolds::ConnId c) { return static_cast<int>(c) - 1; };
  EXPECT_TRUE(f.expire(kT0 + milliseconds(99), "n1", ranks, rank_of).empty());
  const auto late = f.expire(kT0 + milliseconds(100), "n1", ranks, rank_of);
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[0].id, 11u);
  EXPECT_EQ(late[0].message, "get 'k': no rank set the key before the deadline (node n1)");
  EXPECT_EQ(late[1].id, 12u);
  EXPECT_EQ(late[1].message, "barrier 'b' timed out on node n1: local ranks not arrived: 2");
  // Rank 0's arrival was taken back: rank 2 alone does not complete the node.
  EXPECT_FALSE(f.arrive("b", 2, 3, 14, 0, ranks, kT0 + milliseconds(200)));
  EXPECT_TRUE(f.arrive("b", 0, 1, 15, 0, ranks, kT0 + milliseconds(300)));
}

TEST(NodeFolds, TheCacheKeepsTheFirstValueWhileItHasRoom) {
  NodeFolds f(10);
  f.remember("a", "1234");
  f.remember("a", "other");
  ASSERT_NE(f.cached("a"), nullptr);
  EXPECT_EQ(*f.cached("a"), "1234");
  f.remember("bb", "123456");  // 5 + 8 > 10
  EXPECT_EQ(f.cached("bb"), nullptr);
  EXPECT_EQ(f.cached_keys(), 1u);
  f.drop_cache();
  EXPECT_EQ(f.cached("a"), nullptr);
  f.remember("bb", "123456");
  EXPECT_NE(f.cached("bb"), nullptr) << "the room came back";
}

}  // namespace
}  // namespace dp::agent
