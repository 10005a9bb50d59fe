// The step report's logic from plain inputs and a fake clock: the first
// failure stays first, a hang is named only after the bound and only while
// every rank is heard from (not while the job is suspended), stragglers are
// the ranks that wait least.
#include "step_report.hpp"

#include <gtest/gtest.h>

#include <functional>

#include <csignal>
#include <map>
#include <set>
#include <string>

#include "broker.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;
using Clock = StepReport::Clock;

proto::Progress progress(uint64_t started, uint64_t in_op_ms, uint64_t wait_ms = 0,
                         uint64_t since_ms = 1000) {
  proto::Progress p;
  p.set_ops_started(started);
  p.set_ops_done(in_op_ms ? started - 1 : started);
  p.set_in_op_us(in_op_ms * 1000);
  p.set_wait_us(wait_ms * 1000);
  p.set_since_first_op_us(since_ms * 1000);
  return p;
}

class StepReportTest : public ::testing::Test {
 protected:
  StepReportTest() : r_(t0_, "7", "0", 3, milliseconds(10'000)) {
    for (int i = 0; i < 3; ++i) r_.on_hello(i, "n" + std::to_string(i + 1), t0_);
  }
  // Ranks 0 and 2 wait in collective #5; rank 1 is still at #4, computing.
  void beat(Clock::time_point t, uint64_t waited_ms) {
    r_.on_progress(0, progress(5, waited_ms), t);
    r_.on_progress(1, progress(4, 0), t);
    r_.on_progress(2, progress(5, waited_ms), t);
  }
  Clock::time_point t0_ = Clock::now();
  StepReport r_;
};

// The one table: every way a step fails has its own name and a verdict.
TEST(AbortCauseNames, EveryWayHasItsOwnNameAndAVerdict) {
  using H = AbortCause::How;
  std::set<std::string> names;
  for (H h : {H::lost_connection, H::silence, H::refused, H::explicit_abort, H::hang, H::rank_lost,
              H::node_lost, H::node_silent, H::user_signal}) {
    EXPECT_TRUE(names.insert(how_name(h)).second) << how_name(h);
    EXPECT_STRNE(how_verdict(h, SIGTERM), "unknown") << how_name(h);
  }
  EXPECT_STREQ(how_name(H::lost_connection), "lost_connection");
  EXPECT_STREQ(how_name(H::refused), "refused");
  EXPECT_STREQ(how_verdict(H::rank_lost), "task_exit");
  EXPECT_STREQ(how_verdict(H::node_lost), "node_lost");
  EXPECT_STRNE(how_verdict(H::user_signal, SIGINT), how_verdict(H::user_signal, SIGTERM));
}

TEST_F(StepReportTest, HangNamedAfterTheBound) {
  for (int s = 1; s <= 9; ++s) {
    beat(t0_ + milliseconds(1000 * s), 1000 * s);
    EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(1000 * s))) << s << " s";
  }
  beat(t0_ + milliseconds(10'000), 10'000);
  auto v = r_.check_hang(t0_ + milliseconds(11'100));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 1);
  EXPECT_NE(v->message.find("rank 1 (host n2) hangs"), std::string::npos) << v->message;
  EXPECT_NE(v->message.find("rank(s) 0,2"), std::string::npos) << v->message;
  EXPECT_NE(v->message.find("the site's hang_timeout=10 s"), std::string::npos) << v->message;
}

// The user's --dp-hang-timeout set the bound: the verdict names that option,
// the one the user can change, not the site's key.
TEST(StepReportBound, TheUsersBoundIsNamedAsTheirOption) {
  EXPECT_EQ(hang_bound_text(milliseconds(20'000), true), "--dp-hang-timeout=20s");
  EXPECT_EQ(hang_bound_text(milliseconds(120'000), false), "the site's hang_timeout=120 s");
  const auto t0 = Clock::now();
  StepReport r(t0, "7", "0", 2, milliseconds(2'000), /*hang_timeout_by_user=*/true);
  std::optional<HangVerdict> v;
  for (int s = 1; s <= 4 && !v; ++s) {
    const auto t = t0 + milliseconds(1000 * s);
    r.on_progress(0, progress(5, 1000 * s), t);
    r.on_progress(1, progress(4, 0), t);
    v = r.check_hang(t);
  }
  ASSERT_TRUE(v);
  EXPECT_NE(v->message.find("the bound is --dp-hang-timeout=2s"), std::string::npos) << v->message;
  EXPECT_EQ(v->message.find("site"), std::string::npos) << v->message;
}

TEST_F(StepReportTest, NoHangWhileSuspended) {
  beat(t0_ + milliseconds(1000), 1000);
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(1000)));
  // Stopped for 30 s: no heartbeat arrives, so nothing is suspected...
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(31'000)));
  // ...and after the resume the wait counts afresh.
  beat(t0_ + milliseconds(31'500), 31'500);
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(31'500)));
  beat(t0_ + milliseconds(35'000), 35'000);
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(35'000)));
}

TEST_F(StepReportTest, NoHangWhenTheLateRankArrives) {
  beat(t0_ + milliseconds(1000), 1000);
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(1000)));
  r_.on_progress(1, progress(5, 10), t0_ + milliseconds(2000));  // rank 1 enters #5
  beat(t0_ + milliseconds(12'000), 12'000);
  r_.on_progress(1, progress(5, 10), t0_ + milliseconds(12'000));
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(12'000)));
}

TEST_F(StepReportTest, OffWithZeroBound) {
  StepReport off(t0_, "7", "0", 2, milliseconds(0));
  off.on_progress(0, progress(5, 60'000), t0_);
  off.on_progress(1, progress(4, 0), t0_);
  EXPECT_FALSE(off.check_hang(t0_ + milliseconds(100'000)));
}

TEST_F(StepReportTest, FirstFailureStaysFirst) {
  const auto first =
      r_.first_failure(2, "n3", AbortCause::How::lost_connection,
                       "rank 2 (host n3) lost its connection", t0_ + milliseconds(2500));
  EXPECT_NE(first.find("first failure: rank 2 (host n3)"), std::string::npos) << first;
  EXPECT_NE(first.find("[lost_connection, 2.50 s"), std::string::npos) << first;
  const auto later =
      r_.first_failure(0, "n1", AbortCause::How::silence, "rank 0 (host n1) sent no heartbeat",
                       t0_ + milliseconds(5000));
  EXPECT_EQ(later, first);
  ASSERT_TRUE(r_.failure());
  EXPECT_EQ(r_.failure()->rank, 2);
  // A failed step is not also a hang.
  beat(t0_ + milliseconds(20'000), 20'000);
  EXPECT_FALSE(r_.check_hang(t0_ + milliseconds(20'000)));
}

TEST_F(StepReportTest, StragglerWaitsLeast) {
  r_.on_progress(0, progress(100, 0, 600, 1000), t0_);
  r_.on_progress(1, progress(100, 0, 50, 1000), t0_);  // the others wait for rank 1
  r_.on_progress(2, progress(100, 0, 550, 1000), t0_);
  StartupPhases phases(t0_, "test");
  const std::string text = r_.json(phases, DaemonCounters{}, t0_);
  const Json j = Json::parse(text, nullptr, false);
  ASSERT_TRUE(j.is_object()) << text;
  EXPECT_EQ(j["stragglers"][0]["rank"], 1) << text;
  EXPECT_EQ(j["stragglers"][0]["host"], "n2") << text;
  EXPECT_EQ(j["stragglers"][0]["wait_share"], 0.05) << text;
  EXPECT_TRUE(j["failure"].is_null()) << text;
  EXPECT_NE(r_.text(t0_).find(
                "slowest ranks (the others wait for them; least waiting first): rank 1 (host n2)"),
            std::string::npos)
      << r_.text(t0_);
}

TEST_F(StepReportTest, AnyTextAHostOrAMessageCarriesStaysValidJson) {
  StartupPhases phases(t0_, "test");
  StepReport r(t0_, "7\"},{\"x\":1", "0", 2, milliseconds(60'000));
  r.on_hello(0, std::string("n\"1\\\n\xff\xfe", 8), t0_);
  const std::string text = r.json(phases, DaemonCounters{}, t0_);
  const Json j = Json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["job"], "7\"},{\"x\":1");
  EXPECT_FALSE(j.contains("x"));
}

// Through the broker: what ranks receive.
struct Pushes : Outbox {
  std::map<ConnId, std::vector<proto::Response>> got;
  void send(ConnId c, const proto::Response& r) override { got[c].push_back(r); }
  void close(ConnId) override {}
  void notice(const std::string& line) override { notices.push_back(line); }
  std::vector<std::string> notices;
};

const std::string kNonce(rdv::kNonceBytes, 'n');

class BrokerReportTest : public ::testing::Test {
 protected:
  explicit BrokerReportTest(int end_on_hang = 1) : broker_(config(end_on_hang), out_, t0_) {
    for (int r = 0; r < 3; ++r) {
      broker_.on_connect(static_cast<ConnId>(r + 1), t0_);
      proto::Request q;
      auto* h = q.mutable_hello();
      const std::string host = "node" + std::to_string(r);
      h->set_protocol_version(rdv::protocol_range().newest);
      h->set_role(proto::ROLE_RANK);
      h->set_rank(r);
      h->set_host(host);
      h->set_proof(rdv::hello_proof(std::string(64, 'b'), kNonce, proto::ROLE_RANK, r, 0, host));
      send(r, q, t0_);
    }
  }
  static BrokerConfig config(int end_on_hang) {
    BrokerConfig c;
    c.world_size = 3;
    c.secret = std::string(64, 'b');
    c.job_id = "9";
    c.step_id = "1";
    c.limits.heartbeat_timeout = milliseconds(0);
    c.limits.hang_timeout = milliseconds(5'000);
    c.limits.end_on_hang = end_on_hang;
    c.make_nonce = [] { return kNonce; };
    return c;
  }
  void send(int rank, const proto::Request& q, Clock::time_point t) {
    const std::string s = q.SerializeAsString();
    broker_.on_frame(static_cast<ConnId>(rank + 1), s, t);
  }
  void heartbeat(int rank, const proto::Progress& p, Clock::time_point t) {
    proto::Request q;
    *q.mutable_heartbeat()->mutable_progress() = p;
    send(rank, q, t);
  }
  // Each second up to `secs`: ranks 0 and 2 wait in collective #8, rank 1
  // stays at #7; `each` runs after every second's tick.
  void rank1_stays_behind(int secs, const std::function<void(int)>& each = {}) {
    for (int s = 0; s <= secs; ++s) {
      const auto t = t0_ + milliseconds(1'000 * s);
      heartbeat(0, progress(8, 1'000 * s + 1), t);
      heartbeat(1, progress(7, 0), t);
      heartbeat(2, progress(8, 1'000 * s + 1), t);
      broker_.on_tick(t);
      if (each) each(s);
    }
  }
  const proto::Response& push_of(int rank) {
    return out_.got[static_cast<ConnId>(rank + 1)].back();
  }
  Clock::time_point t0_ = Clock::now();
  Pushes out_;
  Broker broker_;
};

TEST_F(BrokerReportTest, LaterDisconnectsDoNotReplaceTheFirstFailure) {
  broker_.on_disconnect(3, t0_ + milliseconds(1'000));  // rank 2
  broker_.on_disconnect(1, t0_ + milliseconds(1'100));  // rank 0, after it
  ASSERT_TRUE(broker_.aborted());
  const auto& p = push_of(1);
  EXPECT_EQ(p.id(), 0u);
  EXPECT_NE(p.message().find("first failure: rank 2 (host node2) lost its connection"),
            std::string::npos)
      << p.message();
  EXPECT_FALSE(p.has_hang());
  const proto::Stats st = broker_.stats();
  EXPECT_EQ(st.first_failure(), p.message());
  EXPECT_NE(st.report_json().find(
                "\"failure\":{\"rank\":2,\"host\":\"node2\",\"how\":\"lost_connection\""),
            std::string::npos)
      << st.report_json();
}

TEST_F(BrokerReportTest, HangIsNamedAndTheHangingRankTold) {
  rank1_stays_behind(6, [this](int s) {
    if (s < 5) {
      EXPECT_FALSE(broker_.aborted()) << s << " s";
    }
  });
  ASSERT_TRUE(broker_.aborted());
  const auto& p = push_of(1);  // rank 1 gets the push that names it
  EXPECT_TRUE(p.has_hang());
  EXPECT_EQ(p.hang().rank(), 1);
  EXPECT_NE(p.message().find("first failure: rank 1 (host node1) hangs"), std::string::npos)
      << p.message();
  EXPECT_NE(p.message().find("[hang, "), std::string::npos) << p.message();
  EXPECT_NE(broker_.stats().rank_table().find("slowest ranks"), std::string::npos);
}

// --dp-on-hang=name (the default): the same hang is named once, on srun's
// stderr and in dp-top's view, and the step runs on.
class BrokerHangNamedOnly : public BrokerReportTest {
 protected:
  BrokerHangNamedOnly() : BrokerReportTest(0) {}
};

TEST_F(BrokerHangNamedOnly, IsNamedOnceAndTheStepRunsOn) {
  rank1_stays_behind(9);
  EXPECT_FALSE(broker_.aborted());
  ASSERT_EQ(out_.notices.size(), 1u);
  EXPECT_EQ(out_.notices[0].rfind("slurm-dp: step 9.1: hang: rank 1 (host node1) hangs", 0), 0u)
      << out_.notices[0];
  EXPECT_NE(out_.notices[0].find("the step runs on"), std::string::npos) << out_.notices[0];
  const proto::Stats st = broker_.stats();
  EXPECT_NE(st.text().find("hang at "), std::string::npos) << st.text();
  EXPECT_NE(st.report_json().find("\"hang\":{\"at_s\""), std::string::npos) << st.report_json();
}

}  // namespace
}  // namespace dp::daemon
