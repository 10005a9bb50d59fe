// PyTorch's own store operations on a store alone (torch_store_ops.hpp): the
// answers PyTorch's server gives, the keys each changes, the limits, and the
// refusal of one outside PyTorch's key space. No broker, peer or socket.
#include "torch_store_ops.hpp"

#include <gtest/gtest.h>

#include "broker_limits.hpp"

namespace dp::daemon {
namespace {

class TorchStoreOps : public ::testing::Test {
 protected:
  // Runs r in PyTorch's key space (or `space`) with a fresh id.
  std::optional<StoreOpDone> run(proto::Request r, proto::Space space = proto::SPACE_TORCH) {
    r.set_id(++id_);
    r.set_space(space);
    auto done = torch_store_op(store_, r);
    if (done) {
      EXPECT_EQ(done->reply.id(), id_);
    }
    return done;
  }
  StoreOpDone done(proto::Request r) {
    auto d = run(std::move(r));
    EXPECT_TRUE(d.has_value());
    return d ? *d : StoreOpDone{};
  }
  static proto::Request multi_set(std::initializer_list<std::pair<std::string, std::string>> kv) {
    proto::Request r;
    for (const auto& [k, v] : kv) {
      r.mutable_multi_set()->add_keys(k);
      r.mutable_multi_set()->add_values(v);
    }
    return r;
  }
  static proto::Request queue_pop(const std::string& key) {
    proto::Request r;
    r.mutable_queue_pop()->set_key(key);
    return r;
  }
  BrokerLimits limits_;
  KvStore store_{limits_};
  uint64_t id_ = 0;
};

TEST_F(TorchStoreOps, TheStepsOwnOperationsAreNotTheirs) {
  proto::Request set;
  set.mutable_set()->set_key("/k");
  EXPECT_FALSE(run(set).has_value());
  proto::Request wait;
  wait.mutable_wait()->add_keys("/k");
  EXPECT_FALSE(run(wait).has_value());
  EXPECT_FALSE(run(proto::Request{}).has_value());
}

TEST_F(TorchStoreOps, OneOutsidePyTorchsKeySpaceIsRefusedByName) {
  proto::Request r;
  r.mutable_append()->set_key("/k");
  auto d = run(r, proto::SPACE_STEP);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->reply.code(), proto::PROTOCOL);
  EXPECT_NE(d->reply.message().find("APPEND is one of PyTorch's store"), std::string::npos);
  EXPECT_TRUE(d->changed.empty());
  EXPECT_EQ(store_.keys(), 0u);
}

TEST_F(TorchStoreOps, AppendCreatesAndGrowsItsKeyAndNamesItChanged) {
  proto::Request r;
  r.mutable_append()->set_key("/log");
  r.mutable_append()->set_value("ab");
  auto d = done(r);
  EXPECT_EQ(d.reply.code(), proto::OK);
  EXPECT_EQ(d.changed, std::vector<std::string>{"/log"});
  r.mutable_append()->set_value("cd");
  done(r);
  EXPECT_EQ(*store_.find(proto::SPACE_TORCH, "/log"), "abcd");
  EXPECT_EQ(store_.find(proto::SPACE_STEP, "/log"), nullptr);
}

TEST_F(TorchStoreOps, MultiSetStoresAllOrNoneWithinTheStepsBytes) {
  limits_.max_total_bytes = 16;
  auto over = done(multi_set({{"/a", "1234"}, {"/b", "123456789"}}));
  EXPECT_EQ(over.reply.code(), proto::LIMIT);
  EXPECT_NE(over.reply.message().find("--max-total-bytes"), std::string::npos);
  EXPECT_TRUE(over.changed.empty());
  EXPECT_EQ(store_.keys(), 0u);

  proto::Request uneven = multi_set({{"/a", "1"}});
  uneven.mutable_multi_set()->add_keys("/b");
  EXPECT_EQ(done(uneven).reply.code(), proto::INVALID_ARGUMENT);

  auto ok = done(multi_set({{"/a", "1"}, {"/b", "2"}}));
  EXPECT_EQ(ok.reply.code(), proto::OK);
  EXPECT_EQ(ok.changed, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(store_.keys(proto::SPACE_TORCH), 2u);
}

TEST_F(TorchStoreOps, MultiGetAnswersInOrderOrNamesTheMissingKey) {
  done(multi_set({{"/a", "1"}, {"/b", "2"}}));
  proto::Request r;
  r.mutable_multi_get()->add_keys("/b");
  r.mutable_multi_get()->add_keys("/a");
  auto d = done(r);
  ASSERT_EQ(d.reply.values_size(), 2);
  EXPECT_EQ(d.reply.values(0), "2");
  EXPECT_EQ(d.reply.values(1), "1");
  EXPECT_TRUE(d.changed.empty());
  r.mutable_multi_get()->add_keys("/none");
  d = done(r);
  EXPECT_EQ(d.reply.code(), proto::NOT_FOUND);
  EXPECT_NE(d.reply.message().find("'/none'"), std::string::npos);
}

TEST_F(TorchStoreOps, CheckAndNumKeysSeePyTorchsSpaceAlone) {
  ASSERT_TRUE(store_.put(proto::SPACE_STEP, "/s", "step").ok());
  done(multi_set({{"/a", "1"}}));
  proto::Request check;
  check.mutable_check()->add_keys("/a");
  EXPECT_TRUE(done(check).reply.flag());
  check.mutable_check()->add_keys("/s");
  EXPECT_FALSE(done(check).reply.flag());
  proto::Request n;
  n.mutable_num_keys();
  EXPECT_EQ(done(n).reply.number(), 1);
}

TEST_F(TorchStoreOps, AQueuePopAnswersItsLengthBeforeAndTheFirstItem) {
  auto empty = done(queue_pop("/q"));
  EXPECT_EQ(empty.reply.number(), 0);
  EXPECT_EQ(empty.reply.value(), "");
  for (const char* item : {"x", "y"}) {
    proto::Request push;
    push.mutable_queue_push()->set_key("/q");
    push.mutable_queue_push()->set_value(item);
    EXPECT_EQ(done(push).changed, std::vector<std::string>{"/q"});
  }
  proto::Request len;
  len.mutable_queue_len()->set_key("/q");
  EXPECT_EQ(done(len).reply.number(), 2);
  auto first = done(queue_pop("/q"));
  EXPECT_EQ(first.reply.number(), 2);
  EXPECT_EQ(first.reply.value(), "x");
  EXPECT_EQ(done(len).reply.number(), 1);
}

TEST_F(TorchStoreOps, AnOversizedKeyIsRefusedBeforeAnythingIsStored) {
  const std::string big(limits_.max_key_bytes + 1, 'k');
  auto d = done(multi_set({{"/a", "1"}, {big, "2"}}));
  EXPECT_NE(d.reply.code(), proto::OK);
  EXPECT_EQ(store_.keys(), 0u);
  proto::Request push;
  push.mutable_queue_push()->set_key(big);
  EXPECT_NE(done(push).reply.code(), proto::OK);
  EXPECT_EQ(store_.queue_length(big), 0u);
}

}  // namespace
}  // namespace dp::daemon
