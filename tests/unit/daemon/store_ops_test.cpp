// The store's operations that need the store alone (store_ops.hpp): ADD by
// each key space's rules, ERASE's two answers, EXISTS, and the keys each
// changed. No broker, peer or socket.
#include "store_ops.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "broker_limits.hpp"

namespace dp::daemon {
namespace {

class StoreOps : public ::testing::Test {
 protected:
  StoreOpDone run(proto::Request r, proto::Space space) {
    r.set_id(++id_);
    r.set_space(space);
    auto d = store_op(store_, r);
    EXPECT_TRUE(d.has_value());
    if (!d) return {};
    EXPECT_EQ(d->reply.id(), id_);
    return *d;
  }
  StoreOpDone add(const std::string& key, int64_t delta, proto::Space space) {
    proto::Request r;
    r.mutable_add()->set_key(key);
    r.mutable_add()->set_delta(delta);
    return run(r, space);
  }
  StoreOpDone erase(const std::string& key, proto::Space space) {
    proto::Request r;
    r.mutable_erase()->set_key(key);
    return run(r, space);
  }
  BrokerLimits limits_;
  KvStore store_{limits_};
  uint64_t id_ = 0;
};

TEST_F(StoreOps, OthersAreNotTheirs) {
  proto::Request set;
  set.mutable_set()->set_key("k");
  EXPECT_FALSE(store_op(store_, set).has_value());
  EXPECT_FALSE(store_op(store_, proto::Request{}).has_value());
}

TEST_F(StoreOps, AddCreatesCountsAndNamesItsKey) {
  auto d = add("n", 5, proto::SPACE_STEP);
  EXPECT_EQ(d.reply.number(), 5);
  EXPECT_EQ(d.changed, std::vector<std::string>{"n"});
  EXPECT_EQ(add("n", -2, proto::SPACE_STEP).reply.number(), 3);
  EXPECT_EQ(*store_.find(proto::SPACE_STEP, "n"), "3");
}

// The step's keys hold strict integers and refuse an overflow; PyTorch's
// server reads as std::stoll does and its sum wraps.
TEST_F(StoreOps, EachKeySpaceAddsByItsOwnRules) {
  ASSERT_TRUE(store_.put(proto::SPACE_STEP, "s", "12abc").ok());
  ASSERT_TRUE(store_.put(proto::SPACE_TORCH, "s", "12abc").ok());
  auto bad = add("s", 1, proto::SPACE_STEP);
  EXPECT_EQ(bad.reply.code(), proto::INVALID_ARGUMENT);
  EXPECT_NE(bad.reply.message().find("not a decimal integer"), std::string::npos);
  EXPECT_TRUE(bad.changed.empty());
  EXPECT_EQ(add("s", 1, proto::SPACE_TORCH).reply.number(), 13);
  const int64_t most = std::numeric_limits<int64_t>::max();
  add("big", most, proto::SPACE_STEP);
  EXPECT_NE(add("big", 1, proto::SPACE_STEP).reply.message().find("overflows int64"),
            std::string::npos);
  add("big", most, proto::SPACE_TORCH);
  EXPECT_EQ(add("big", 1, proto::SPACE_TORCH).reply.number(), std::numeric_limits<int64_t>::min());
}

TEST_F(StoreOps, PyTorchsEraseCountsTheStepsNamesAMissingKey) {
  ASSERT_TRUE(store_.put(proto::SPACE_TORCH, "k", "v").ok());
  EXPECT_EQ(erase("k", proto::SPACE_TORCH).reply.number(), 1);
  EXPECT_EQ(erase("k", proto::SPACE_TORCH).reply.number(), 0);
  EXPECT_EQ(erase("k", proto::SPACE_STEP).reply.code(), proto::NOT_FOUND);
  ASSERT_TRUE(store_.put(proto::SPACE_STEP, "k", "v").ok());
  EXPECT_EQ(erase("k", proto::SPACE_STEP).reply.code(), proto::OK);
  EXPECT_EQ(store_.keys(), 0u);
}

TEST_F(StoreOps, ExistsLooksInItsSpace) {
  ASSERT_TRUE(store_.put(proto::SPACE_STEP, "k", "v").ok());
  proto::Request r;
  r.mutable_exists()->set_key("k");
  EXPECT_TRUE(run(r, proto::SPACE_STEP).reply.flag());
  EXPECT_FALSE(run(r, proto::SPACE_TORCH).reply.flag());
}

}  // namespace
}  // namespace dp::daemon
