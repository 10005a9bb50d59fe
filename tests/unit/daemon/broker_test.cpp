// The broker's logic without sockets: a recording Outbox and a fake clock.
#include "broker.hpp"

#include <gtest/gtest.h>

#include <map>

#include "frame_codec.hpp"

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;

struct Recorder : Outbox {
  std::map<ConnId, std::vector<proto::Response>> sent;
  std::vector<ConnId> closed;
  void send(ConnId c, const proto::Response& r) override { sent[c].push_back(r); }
  void close(ConnId c) override { closed.push_back(c); }
  proto::Response last(ConnId c) { return sent[c].empty() ? proto::Response() : sent[c].back(); }
};

const std::string kSecret(64, 'a');

class BrokerTest : public ::testing::Test {
 protected:
  BrokerTest() : broker_(config(2), out_, t0_) {}
  static BrokerConfig config(int world) {
    BrokerConfig c;
    c.world_size = world;
    c.secret = kSecret;
    c.job_id = "1";
    c.step_id = "0";
    c.limits.hello_timeout = milliseconds(1'000);
    c.limits.heartbeat_timeout = milliseconds(3'000);
    return c;
  }
  void frame(ConnId c, const proto::Request& r, Clock::time_point t) {
    std::string s = r.SerializeAsString();
    broker_.on_frame(c, s, t);
  }
  void hello(ConnId c, int rank, proto::Role role = proto::ROLE_RANK) {
    broker_.on_connect(c, t0_);
    proto::Request r;
    r.set_id(1);
    auto* h = r.mutable_hello();
    h->set_protocol_version(rdv::kProtocolVersion);
    h->set_secret(kSecret);
    h->set_rank(rank);
    h->set_role(role);
    h->set_host("h" + std::to_string(rank));
    frame(c, r, t0_);
    ASSERT_EQ(out_.last(c).code(), proto::OK);
  }
  Clock::time_point t0_ = Clock::now();
  Recorder out_;
  Broker broker_;
};

TEST_F(BrokerTest, BlockingGetIsAnsweredBySet) {
  hello(1, 0);
  hello(2, 1);
  proto::Request g;
  g.set_id(10);
  g.mutable_get()->set_key("id");
  g.mutable_get()->set_blocking(true);
  g.mutable_get()->set_timeout_ms(1000);
  frame(2, g, t0_);
  EXPECT_EQ(out_.sent[2].size(), 1u);  // only the hello reply so far
  proto::Request s;
  s.set_id(11);
  s.mutable_set()->set_key("id");
  s.mutable_set()->set_value("V");
  frame(1, s, t0_);
  ASSERT_EQ(out_.sent[2].size(), 2u);
  EXPECT_EQ(out_.last(2).id(), 10u);
  EXPECT_EQ(out_.last(2).value(), "V");
}

TEST_F(BrokerTest, GetTimesOutOnTick) {
  hello(1, 0);
  proto::Request g;
  g.set_id(10);
  g.mutable_get()->set_key("id");
  g.mutable_get()->set_blocking(true);
  g.mutable_get()->set_timeout_ms(500);
  frame(1, g, t0_);
  broker_.on_tick(t0_ + milliseconds(400));
  EXPECT_EQ(out_.sent[1].size(), 1u);
  broker_.on_tick(t0_ + milliseconds(600));
  ASSERT_EQ(out_.sent[1].size(), 2u);
  EXPECT_EQ(out_.last(1).code(), proto::TIMEOUT);
}

TEST_F(BrokerTest, DisconnectOfARankAbortsWaitersAndPushesToOthers) {
  hello(1, 0);
  hello(2, 1);
  proto::Request b;
  b.set_id(20);
  b.mutable_barrier()->set_name("b");
  frame(1, b, t0_);
  broker_.on_disconnect(2, t0_);
  EXPECT_TRUE(broker_.aborted());
  // Rank 0: its barrier fails, then the push (id 0).
  ASSERT_GE(out_.sent[1].size(), 3u);
  EXPECT_EQ(out_.sent[1][1].id(), 20u);
  EXPECT_EQ(out_.sent[1][1].code(), proto::ABORTED);
  EXPECT_NE(out_.sent[1][1].message().find("rank 1 (host h1)"), std::string::npos);
  EXPECT_EQ(out_.sent[1][2].id(), 0u);
}

TEST_F(BrokerTest, HelloTimeoutClosesSilentConnections) {
  broker_.on_connect(7, t0_);
  broker_.on_tick(t0_ + milliseconds(900));
  EXPECT_TRUE(out_.closed.empty());
  broker_.on_tick(t0_ + milliseconds(1'100));
  ASSERT_EQ(out_.closed.size(), 1u);
  EXPECT_EQ(out_.closed[0], 7u);
  EXPECT_FALSE(broker_.knows(7));
}

TEST_F(BrokerTest, MissedHeartbeatsAbort) {
  hello(1, 0);
  hello(2, 1);
  proto::Request hb;
  hb.mutable_heartbeat();
  frame(1, hb, t0_ + milliseconds(2'500));
  broker_.on_tick(t0_ + milliseconds(3'100));
  EXPECT_TRUE(broker_.aborted());
  EXPECT_NE(out_.last(1).message().find("rank 1 (host h1) sent no heartbeat"), std::string::npos);
}

TEST_F(BrokerTest, TotalBytesLimit) {
  BrokerConfig c = config(1);
  c.limits.max_total_bytes = 100;
  Recorder out;
  Broker b(c, out, t0_);
  b.on_connect(1, t0_);
  proto::Request h;
  h.mutable_hello()->set_protocol_version(rdv::kProtocolVersion);
  h.mutable_hello()->set_secret(kSecret);
  b.on_frame(1, h.SerializeAsString(), t0_);
  proto::Request s;
  s.set_id(2);
  s.mutable_set()->set_key("k");
  s.mutable_set()->set_value(std::string(90, 'x'));
  b.on_frame(1, s.SerializeAsString(), t0_);
  EXPECT_EQ(out.last(1).code(), proto::OK);
  s.mutable_set()->set_key("k2");
  b.on_frame(1, s.SerializeAsString(), t0_);
  EXPECT_EQ(out.last(1).code(), proto::LIMIT);
  EXPECT_NE(out.last(1).message().find("--max-total-bytes"), std::string::npos);
  // Overwriting the same key with a smaller value is fine.
  s.mutable_set()->set_key("k");
  s.mutable_set()->set_value("small");
  b.on_frame(1, s.SerializeAsString(), t0_);
  EXPECT_EQ(out.last(1).code(), proto::OK);
  EXPECT_EQ(b.stats().bytes_stored(), 6u);
}

TEST(SecretsEqual, ComparesWholeStrings) {
  EXPECT_TRUE(secrets_equal("abc", "abc"));
  EXPECT_FALSE(secrets_equal("abc", "abd"));
  EXPECT_FALSE(secrets_equal("abc", "abcd"));
  EXPECT_FALSE(secrets_equal("", "a"));
  EXPECT_TRUE(secrets_equal("", ""));
}

}  // namespace
}  // namespace dp::daemon
