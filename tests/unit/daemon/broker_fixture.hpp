// The broker without sockets: a recording Outbox and a fake clock, shared by
// the broker tests of ranks (broker_test.cpp) and of node agents (node_broker_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <span>

#include "broker.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "signed_hello.hpp"
#include "stacks_answer.hpp"
#include "step_fixture.hpp"

namespace dp::daemon::test {

using std::chrono::milliseconds;

// Two node agents' connections, the tests' node "na" and node "nb".
inline constexpr ConnId kNodeA = 1, kNodeB = 2;

inline const std::string kSecret(64, 'a');
inline const std::string kNonce(rdv::kNonceBytes, 'n');

inline proto::Request hello_req(int rank, proto::Role role, const std::string& host,
                                const std::string& secret = kSecret,
                                const std::string& nonce = kNonce) {
  return dp::test::signed_hello(secret, nonce, role, rank, 0, host);
}

// A node agent's hello for ranks (ROLE_NODE; the proof covers them).
inline proto::Request node_hello_req(const std::vector<int32_t>& ranks, const std::string& host) {
  return dp::test::signed_hello(kSecret, kNonce, proto::ROLE_NODE, 0, 0, host, ranks);
}

class BrokerTest : public ::testing::Test {
 protected:
  explicit BrokerTest(int world = 2) : broker_(config(world), out_, t0_) {}
  static BrokerConfig config(int world) {
    BrokerConfig c;
    c.world_size = world;
    c.secret = kSecret;
    c.job_id = "1";
    c.step_id = "0";
    c.limits.hello_timeout = milliseconds(1'000);
    c.limits.heartbeat_timeout = milliseconds(3'000);
    c.make_nonce = [] { return kNonce; };
    return c;
  }
  void frame(ConnId c, const proto::Request& r, Clock::time_point t) {
    std::string s = r.SerializeAsString();
    broker_.on_frame(c, s, t);
  }
  void hello(ConnId c, int rank, proto::Role role = proto::ROLE_RANK) {
    broker_.on_connect(c, t0_);
    ASSERT_EQ(out_.last(c).challenge(), kNonce);
    frame(c, hello_req(rank, role, "h" + std::to_string(rank)), t0_);
    ASSERT_EQ(out_.last(c).code(), proto::OK);
    out_.sent[c].erase(out_.sent[c].begin());  // tests count replies from the hello's on
  }
  // The server's 100 ms ticks from `from` to `to`; `each` runs before every tick.
  void ticks(milliseconds from, milliseconds to,
             const std::function<void(Clock::time_point)>& each = {}) {
    for (auto t = from; t <= to; t += milliseconds(100)) {
      if (each) each(t0_ + t);
      broker_.on_tick(t0_ + t);
    }
  }
  void heartbeat(ConnId c, Clock::time_point t) {
    proto::Request hb;
    hb.mutable_heartbeat();
    frame(c, hb, t);
  }
  // A broker of its own config (limits other than broker_'s) that connection
  // 1 has said hello to; its replies go to other_out_.
  Broker& other_broker(const BrokerConfig& c, const proto::Request& hello) {
    other_.emplace(c, other_out_, t0_);
    other_->on_connect(1, t0_);
    other_->on_frame(1, hello.SerializeAsString(), t0_);
    return *other_;
  }
  // A broker of its own config whose nodes 1 ("na", ranks 0-1) and 2 ("nb",
  // ranks 2-3) said hello as node agents; its replies go to other_out_.
  Broker& two_node_broker(const BrokerConfig& c) {
    other_.emplace(c, other_out_, t0_);
    for (auto [conn, host, ranks] : {std::tuple{ConnId{1}, "na", std::vector<int32_t>{0, 1}},
                                     std::tuple{ConnId{2}, "nb", std::vector<int32_t>{2, 3}}}) {
      other_->on_connect(conn, t0_);
      other_->on_frame(conn, node_hello_req(ranks, host).SerializeAsString(), t0_);
    }
    return *other_;
  }
  Clock::time_point t0_ = Clock::now();
  Recorder out_;
  Broker broker_;
  Recorder other_out_;
  std::optional<Broker> other_;
};

}  // namespace dp::daemon::test
