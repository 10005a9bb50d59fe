// The step's blocking calls alone, from plain values: gets and waits woken
// by their keys, a barrier closing when the whole world is in, a call taken
// back everywhere at once (its arrivals too), deadlines in order.
#include "pending_calls.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;

const Clock::time_point kCalls0 = Clock::time_point{} + std::chrono::hours(1);

Waiter pending_call(ConnId conn, WaitKind kind, std::vector<std::string> keys, int timeout_ms = 0,
                    std::vector<int> ranks = {}) {
  Waiter w;
  w.conn = conn;
  w.request_id = 7;
  w.kind = kind;
  w.keys = std::move(keys);
  w.ranks = std::move(ranks);
  w.since = kCalls0;
  w.timeout = milliseconds(timeout_ms);
  return w;
}

TEST(PendingCalls, AGetWakesOnItsKeyAWaitOnceEveryKeyIsSet) {
  PendingCalls calls(4);
  const uint64_t get = calls.add(pending_call(1, WaitKind::get, {"a"}));
  const uint64_t wait = calls.add(pending_call(2, WaitKind::wait, {"a", "b"}));
  std::set<std::string> set{"a"};
  auto is_set = [&](const std::string& k) { return set.count(k) != 0; };
  EXPECT_EQ(calls.key_set(proto::SPACE_TORCH, "a", is_set),
            std::vector<uint64_t>{});  // other space
  EXPECT_EQ(calls.key_set(proto::SPACE_STEP, "a", is_set), std::vector<uint64_t>{get});
  EXPECT_EQ(calls.find(wait)->keys, std::vector<std::string>{"b"});  // still missing
  calls.take(get);
  set.insert("b");
  EXPECT_EQ(calls.key_set(proto::SPACE_STEP, "b", is_set), std::vector<uint64_t>{wait});
  calls.take(wait);
  EXPECT_EQ(calls.size(), 0u);
  EXPECT_TRUE(calls.key_set(proto::SPACE_STEP, "b", is_set).empty());
}

TEST(PendingCalls, ABarrierClosesWhenTheWholeWorldIsIn) {
  PendingCalls calls(4);
  int twice = -1;
  auto a = calls.arrive(pending_call(1, WaitKind::barrier, {"b"}, 0, {0, 1}), &twice);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->complete.empty());
  EXPECT_EQ(calls.barrier_progress("b"), "2 of 4 ranks arrived; missing ranks 2,3");
  EXPECT_FALSE(calls.arrive(pending_call(2, WaitKind::barrier, {"b"}, 0, {1}), &twice));
  EXPECT_EQ(twice, 1);
  EXPECT_EQ(calls.size(), 1u);  // the refused arrival left nothing
  auto b = calls.arrive(pending_call(2, WaitKind::barrier, {"b"}, 0, {2, 3}), &twice);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->complete, (std::vector<uint64_t>{a->id, b->id}));
  EXPECT_FALSE(calls.has_barrier("b"));
  for (uint64_t id : b->complete) ASSERT_TRUE(calls.take(id));
  EXPECT_EQ(calls.size(), 0u);
  EXPECT_EQ(calls.open_barriers(), 0u);
}

TEST(PendingCalls, ACallTakenBackLeavesNoTraceItsArrivalsIncluded) {
  PendingCalls calls(3);
  int twice = -1;
  auto a = calls.arrive(pending_call(1, WaitKind::barrier, {"b"}, 0, {0}), &twice);
  auto b = calls.arrive(pending_call(2, WaitKind::barrier, {"b"}, 0, {1}), &twice);
  const uint64_t get = calls.add(pending_call(1, WaitKind::get, {"k"}, 1000));
  EXPECT_EQ(calls.of_conn(1), (std::vector<uint64_t>{a->id, get}));
  for (uint64_t id : calls.of_conn(1)) calls.take(id);  // conn 1 left
  EXPECT_TRUE(calls.of_conn(1).empty());
  EXPECT_EQ(calls.barrier_progress("b"), "1 of 3 ranks arrived; missing ranks 0,2");
  EXPECT_FALSE(calls.take(get));                               // gone already
  EXPECT_FALSE(calls.next_due(kCalls0 + milliseconds(5000)));  // its deadline went with it
  EXPECT_TRUE(
      calls.key_set(proto::SPACE_STEP, "k", [](const std::string&) { return true; }).empty());
  ASSERT_TRUE(
      calls.arrive(pending_call(3, WaitKind::barrier, {"b"}, 0, {0}), &twice));  // 0 may come again
  calls.take(b->id);
  EXPECT_EQ(calls.barrier_progress("b"), "1 of 3 ranks arrived; missing ranks 1,2");
}

TEST(PendingCalls, DeadlinesComeDueInTheirOrder) {
  PendingCalls calls(2);
  const uint64_t late = calls.add(pending_call(1, WaitKind::get, {"x"}, 300));
  const uint64_t none = calls.add(pending_call(1, WaitKind::get, {"y"}));
  const uint64_t soon = calls.add(pending_call(2, WaitKind::wait, {"z"}, 100));
  EXPECT_FALSE(calls.next_due(kCalls0 + milliseconds(99)));
  EXPECT_EQ(calls.next_due(kCalls0 + milliseconds(300)), soon);
  calls.take(soon);
  EXPECT_EQ(calls.next_due(kCalls0 + milliseconds(300)), late);
  calls.take(late);
  EXPECT_FALSE(calls.next_due(kCalls0 + std::chrono::hours(24)));
  EXPECT_TRUE(calls.find(none));
}

TEST(PendingCalls, AnOpenBarrierNamesAtMostEightMissingRanks) {
  PendingCalls calls(20);
  int twice = -1;
  ASSERT_TRUE(calls.arrive(pending_call(1, WaitKind::barrier, {"b"}, 0, {0}), &twice));
  EXPECT_EQ(calls.barrier_progress("b"),
            "1 of 20 ranks arrived; missing ranks 1,2,3,4,5,6,7,8,...");
  EXPECT_FALSE(calls.barrier_progress("other"));
}

// The step's limits: calls pending at once, barriers open at once; a call
// joining an open barrier opens none.
TEST(PendingCalls, OneCallTooManyIsRefusedNamingItsLimit) {
  PendingCalls calls(2, 2, 1);
  EXPECT_FALSE(calls.refusal(nullptr).has_value());
  calls.add(pending_call(1, WaitKind::get, {"a"}));
  int twice = -1;
  ASSERT_TRUE(calls.arrive(pending_call(2, WaitKind::barrier, {"b"}, 0, {0}), &twice).has_value());
  const auto full = calls.refusal(nullptr);
  ASSERT_TRUE(full.has_value());
  EXPECT_NE(full->find("(limit 2, dp-rendezvousd --max-pending-calls)"), std::string::npos)
      << *full;
  PendingCalls roomy(2, 10, 1);
  roomy.arrive(pending_call(2, WaitKind::barrier, {"b"}, 0, {0}), &twice);
  const std::string open = "b", other = "c";
  EXPECT_FALSE(roomy.refusal(&open).has_value()) << "it joins the open barrier";
  const auto barriers = roomy.refusal(&other);
  ASSERT_TRUE(barriers.has_value());
  EXPECT_NE(barriers->find("--max-open-barriers"), std::string::npos) << *barriers;
  EXPECT_EQ(PendingCalls(1000).refusal(nullptr), std::nullopt);
}

TEST(PendingCalls, ATimeoutSaysWhatWasWaitedForAndWhoIsMissing) {
  PendingCalls calls(3);
  EXPECT_EQ(calls.timeout_message(pending_call(1, WaitKind::get, {"id"}, 2500)),
            "get 'id' timed out after 2500 ms: no peer set the key; check that the publishing "
            "rank is running");
  EXPECT_EQ(calls.timeout_message(pending_call(1, WaitKind::wait, {"x", "y"}, 1000)),
            "wait timed out after 1000 ms: 2 key(s) still missing, first 'x'");
  int twice = -1;
  const Waiter b = pending_call(1, WaitKind::barrier, {"sync"}, 1000, {0});
  calls.arrive(b, &twice);
  const std::string msg = calls.timeout_message(b);
  EXPECT_EQ(msg.rfind("barrier 'sync' timed out after 1000 ms: 1 of 3 ranks arrived", 0), 0u)
      << msg;
}

}  // namespace
}  // namespace dp::daemon
