// The broker's logic without sockets: a recording Outbox and a fake clock.
#include "broker_fixture.hpp"

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture
using std::chrono::milliseconds;

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

TEST_F(BrokerTest, NoRandomBytesRefusesTheConnectionNamingTheCause) {
  BrokerConfig c = config(2);
  c.make_nonce = []() -> Result<std::string> {
    return make_error(Errc::unavailable, "cannot read random bytes from the kernel: getrandom: x");
  };
  Broker b(c, other_out_, t0_);
  b.on_connect(1, t0_);
  ASSERT_EQ(other_out_.sent[1].size(), 1u);
  EXPECT_TRUE(other_out_.last(1).challenge().empty());
  EXPECT_EQ(other_out_.last(1).code(), proto::UNAVAILABLE);
  EXPECT_NE(other_out_.last(1).message().find("getrandom"), std::string::npos);
  EXPECT_EQ(other_out_.closed, (std::vector<ConnId>{1}));
  EXPECT_EQ(b.unauthenticated(), 0);
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
  // Rank 0 is heard all along; rank 1 falls silent at once.
  ticks(milliseconds(100), milliseconds(2'900), [&](Clock::time_point t) { heartbeat(1, t); });
  EXPECT_FALSE(broker_.aborted());
  ticks(milliseconds(3'000), milliseconds(3'100), [&](Clock::time_point t) { heartbeat(1, t); });
  EXPECT_TRUE(broker_.aborted());
  EXPECT_NE(out_.last(1).message().find("rank 1 (host h1) sent no heartbeat"), std::string::npos);
  ASSERT_TRUE(broker_.abort_cause().has_value());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::silence);
  EXPECT_EQ(broker_.abort_cause()->rank, 1);
  EXPECT_EQ(broker_.abort_cause()->host, "h1");
}

TEST_F(BrokerTest, EveryRankSilentIsASuspensionNotADeath) {
  hello(1, 0);
  hello(2, 1);
  ticks(milliseconds(100), milliseconds(20'000));  // 20 s of scontrol suspend: nobody is heard
  EXPECT_FALSE(broker_.aborted());
  EXPECT_TRUE(broker_.liveness().suspended());
  // Resumed: rank 0 is heard first, rank 1 half a second later; both then heartbeat.
  heartbeat(1, t0_ + milliseconds(20'050));
  EXPECT_FALSE(broker_.liveness().suspended());
  ticks(milliseconds(20'100), milliseconds(24'000), [&](Clock::time_point t) {
    heartbeat(1, t);
    if (t >= t0_ + milliseconds(20'500)) heartbeat(2, t);
  });
  EXPECT_FALSE(broker_.aborted());
  // A rank that then stays silent while rank 0 is heard is dead after the limit.
  ticks(milliseconds(24'100), milliseconds(27'000), [&](Clock::time_point t) { heartbeat(1, t); });
  EXPECT_TRUE(broker_.aborted());
  ASSERT_TRUE(broker_.abort_cause().has_value());
  EXPECT_EQ(broker_.abort_cause()->rank, 1);
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::silence);
}

TEST_F(BrokerTest, TheDaemonsOwnStopIsNotHeldAgainstRanks) {
  hello(1, 0);
  hello(2, 1);
  ticks(milliseconds(100), milliseconds(2'000), [&](Clock::time_point t) { heartbeat(1, t); });
  // The daemon (or srun's host) is stopped for 10 s; then the next tick runs.
  // Rank 1's silence is 12 s of wall time but only 2 s of the daemon's.
  ticks(milliseconds(12'000), milliseconds(12'900), [&](Clock::time_point t) { heartbeat(1, t); });
  EXPECT_FALSE(broker_.aborted());
  EXPECT_NE(broker_.stats().text().find("daemon_stop_gaps 1"), std::string::npos)
      << broker_.stats().text();
  ticks(milliseconds(13'000), milliseconds(15'100), [&](Clock::time_point t) { heartbeat(1, t); });
  EXPECT_TRUE(broker_.aborted());  // 3 s of the daemon's running time after the gap
}

TEST_F(BrokerTest, ADroppedConnectionIsDeathAtOnceEvenWhileSuspended) {
  hello(1, 0);
  hello(2, 1);
  ticks(milliseconds(100), milliseconds(5'000));
  ASSERT_TRUE(broker_.liveness().suspended());
  broker_.on_disconnect(2, t0_ + milliseconds(5'010));
  EXPECT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::lost_connection);
  EXPECT_EQ(broker_.abort_cause()->rank, 1);
  EXPECT_NE(out_.last(1).message().find("rank 1 (host h1) lost its connection"), std::string::npos);
}

// dp-top prints the daemon's Stats as they come: its plain view the text
// ("abort_cause ..."), --json the step report. A lost connection and a
// refused peer are each one word in both, the word the abort text carries.
TEST_F(BrokerTest, DpTopsPlainAndJsonViewsNameAFailureWithOneWord) {
  const auto views_name = [](Broker& b, const std::string& word) {
    const proto::Stats st = b.stats();
    EXPECT_NE(st.text().find("abort_cause " + word + " rank 1"), std::string::npos) << st.text();
    EXPECT_NE(st.report_json().find("\"how\":\"" + word + "\""), std::string::npos)
        << st.report_json();
    EXPECT_NE(st.first_failure().find("[" + word + ","), std::string::npos) << st.first_failure();
  };
  hello(1, 0);
  hello(2, 1);
  broker_.on_disconnect(2, t0_ + milliseconds(10));
  ASSERT_EQ(broker_.abort_cause()->how, AbortCause::How::lost_connection);
  views_name(broker_, "lost_connection");

  Broker refusing(config(2), other_out_, t0_);
  for (int rank : {0, 1}) {
    const ConnId c = static_cast<ConnId>(rank + 1);
    refusing.on_connect(c, t0_);
    refusing.on_frame(
        c, hello_req(rank, proto::ROLE_RANK, "h" + std::to_string(rank)).SerializeAsString(), t0_);
  }
  refusing.on_frame(2, "\xff\xff\xff", t0_ + milliseconds(10));  // no request: closed
  ASSERT_EQ(refusing.abort_cause()->how, AbortCause::How::refused);
  views_name(refusing, "refused");
}

TEST_F(BrokerTest, ConnectionsWithoutHelloEvictTheOldestNeverARank) {
  BrokerConfig c = config(2);
  c.limits.max_unauthenticated = 3;
  Broker& b = other_broker(c, hello_req(0, proto::ROLE_RANK, "r0"));
  Recorder& out = other_out_;
  ASSERT_EQ(out.last(1).code(), proto::OK);
  // An attacker's connections: room is kept for the budget (3) and the one rank to come.
  for (ConnId x = 10; x < 20; ++x) b.on_connect(x, t0_);
  EXPECT_EQ(b.unauthenticated(), 4);
  EXPECT_EQ(out.closed.size(), 6u);
  EXPECT_EQ(out.last(10).code(), proto::LIMIT);
  EXPECT_NE(out.last(10).message().find("--max-unauthenticated"), std::string::npos);
  b.on_connect(2, t0_);  // the second rank arrives: it takes the oldest's place and says hello
  b.on_frame(2, hello_req(1, proto::ROLE_RANK, "r1").SerializeAsString(), t0_);
  EXPECT_EQ(out.last(2).code(), proto::OK);
  EXPECT_TRUE(b.knows(1) && b.knows(2));
  EXPECT_FALSE(b.aborted());
}

TEST_F(BrokerTest, AHelloMustAnswerItsOwnChallenge) {
  broker_.on_connect(5, t0_);
  frame(5, hello_req(0, proto::ROLE_RANK, "h0", kSecret, std::string(rdv::kNonceBytes, 'x')), t0_);
  EXPECT_EQ(out_.last(5).code(), proto::UNAUTHORIZED);  // a proof for another nonce: a replay
  broker_.on_connect(6, t0_);
  proto::Request r = hello_req(0, proto::ROLE_RANK, "h0");
  r.mutable_hello()->set_rank(1);  // the proof covered rank 0
  frame(6, r, t0_);
  EXPECT_EQ(out_.last(6).code(), proto::UNAUTHORIZED);
  broker_.on_connect(7, t0_);
  frame(7, hello_req(0, proto::ROLE_RANK, "h0", std::string(64, 'b')), t0_);
  EXPECT_EQ(out_.last(7).code(), proto::UNAUTHORIZED);
  EXPECT_NE(out_.last(7).message().find("DP_RDV_SECRET"), std::string::npos);
  EXPECT_FALSE(broker_.knows(5) || broker_.knows(6) || broker_.knows(7));
}

TEST_F(BrokerTest, TotalBytesLimit) {
  BrokerConfig c = config(1);
  c.limits.max_total_bytes = 100;
  Broker& b = other_broker(c, hello_req(-1, proto::ROLE_AGENT, ""));
  Recorder& out = other_out_;
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
  EXPECT_EQ(b.stats(false).keys(), 1u) << "the refused key is not left behind";
  // Overwriting the same key with a smaller value is fine.
  s.mutable_set()->set_key("k");
  s.mutable_set()->set_value("small");
  b.on_frame(1, s.SerializeAsString(), t0_);
  EXPECT_EQ(out.last(1).code(), proto::OK);
  EXPECT_EQ(b.stats().bytes_stored(), 6u);
}

}  // namespace
}  // namespace dp::daemon
