// Anyone with the step's secret cannot grow the daemon without bound:
// blocking calls pending at once and barriers open at once are capped, and
// the refusal names the limit.
#include "broker_fixture.hpp"

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture

proto::Request blocking_get(uint64_t id, const std::string& key) {
  proto::Request r;
  r.set_id(id);
  r.mutable_get()->set_key(key);
  r.mutable_get()->set_blocking(true);
  return r;
}

proto::Request barrier(uint64_t id, const std::string& name) {
  proto::Request r;
  r.set_id(id);
  r.mutable_barrier()->set_name(name);
  return r;
}

TEST_F(BrokerTest, PendingCallsAreCappedNamingTheLimit) {
  BrokerConfig c = config(2);
  c.limits.max_pending_calls = 3;
  Broker& b = other_broker(c, hello_req(0, proto::ROLE_RANK, "r0"));
  for (uint64_t id = 10; id < 13; ++id)
    b.on_frame(1, blocking_get(id, "k" + std::to_string(id)).SerializeAsString(), t0_);
  EXPECT_EQ(b.stats().text().find("pending_calls 3\n") != std::string::npos, true);
  b.on_frame(1, blocking_get(13, "k13").SerializeAsString(), t0_);
  EXPECT_EQ(other_out_.last(1).code(), proto::LIMIT);
  EXPECT_NE(other_out_.last(1).message().find("--max-pending-calls"), std::string::npos);
  EXPECT_FALSE(b.aborted());
}

TEST_F(BrokerTest, OpenBarriersAreCappedNamingTheLimit) {
  BrokerConfig c = config(2);
  c.limits.max_open_barriers = 2;
  Broker& b = other_broker(c, hello_req(0, proto::ROLE_RANK, "r0"));
  b.on_frame(1, barrier(10, "a").SerializeAsString(), t0_);
  b.on_frame(1, barrier(11, "b").SerializeAsString(), t0_);
  b.on_frame(1, barrier(12, "c").SerializeAsString(), t0_);
  EXPECT_EQ(other_out_.last(1).id(), 12u);
  EXPECT_EQ(other_out_.last(1).code(), proto::LIMIT);
  EXPECT_NE(other_out_.last(1).message().find("--max-open-barriers"), std::string::npos);
  EXPECT_NE(b.stats().text().find("open_barriers 2\n"), std::string::npos);
}

}  // namespace
}  // namespace dp::daemon
