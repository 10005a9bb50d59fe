// dp-top --stacks in the broker, without sockets: the ask pushed to every
// node agent, their answers merged, a node that never answers named at the
// deadline, a second ask joining the round in flight.
#include <string>
#include <vector>

#include "broker_fixture.hpp"
#include "stacks_ask.hpp"

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture

class BrokerStacksTest : public BrokerTest {
 protected:
  BrokerStacksTest() : BrokerTest(4) {}
  void nodes() {
    for (auto [c, host, ranks] : {std::tuple{kNodeA, "na", std::vector<int32_t>{0, 1}},
                                  std::tuple{kNodeB, "nb", std::vector<int32_t>{2, 3}}}) {
      broker_.on_connect(c, t0_);
      frame(c, node_hello_req(ranks, host), t0_);
      ASSERT_EQ(out_.last(c).code(), proto::OK);
    }
  }
  // The node's ranks, each asleep without Python frames (Debian 12's 3.11).
  void answer(ConnId c, uint64_t ask, std::vector<int> ranks, Clock::time_point t) {
    proto::Request r;
    r.mutable_stacks_answer()->set_ask(ask);
    for (int rank : ranks) {
      auto* m = add_rank_thread(*r.mutable_stacks_answer(), rank);
      m->set_no_python("debug_build");
      m->set_no_python_detail("a debug build of Python 3.11");
    }
    frame(c, r, t);
  }
  uint64_t asked(ConnId c) {
    const auto& push = out_.last(c);
    EXPECT_EQ(push.id(), 0u);
    EXPECT_TRUE(push.has_stacks_ask());
    EXPECT_GT(push.stacks_ask().deadline_ms(), 0u);
    return push.stacks_ask().ask();
  }
  std::vector<std::vector<std::string>> got_;
  Broker::StacksDone done() {
    return [this](std::vector<std::string> lines) { got_.push_back(std::move(lines)); };
  }
};

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST_F(BrokerStacksTest, EveryNodeAnswersAndTheRanksAreMerged) {
  nodes();
  broker_.ask_stacks(done(), t0_);
  const uint64_t ask = asked(kNodeA);
  EXPECT_EQ(asked(kNodeB), ask);
  broker_.ask_stacks(done(), t0_ + milliseconds(10));  // joins the round in flight
  answer(kNodeB, ask, {2, 3}, t0_ + milliseconds(20));
  EXPECT_TRUE(got_.empty());
  answer(kNodeA, ask, {0, 1}, t0_ + milliseconds(30));
  ASSERT_EQ(got_.size(), 2u);
  EXPECT_EQ(got_[0], got_[1]);
  const std::string text = joined(got_[0]);
  EXPECT_NE(text.find("ranks 0-3: main thread sleeping"), std::string::npos) << text;
  EXPECT_NE(text.find("no Python frames (debug_build): a debug build of Python 3.11"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("read on na (ranks 0-1), nb (ranks 2-3)"), std::string::npos) << text;
  EXPECT_EQ(text.find("no answer"), std::string::npos) << text;
  // A late or stale answer changes nothing; the next ask is a new round.
  answer(kNodeA, ask, {0, 1}, t0_ + milliseconds(40));
  EXPECT_EQ(got_.size(), 2u);
  broker_.ask_stacks(done(), t0_ + milliseconds(50));
  EXPECT_NE(asked(kNodeA), ask);
}

TEST_F(BrokerStacksTest, ANodeThatNeverAnswersIsNamedAtTheDeadline) {
  nodes();
  const auto due = broker_.ask_stacks(done(), t0_);
  EXPECT_EQ(due, t0_ + Broker::kStacksWait);
  answer(kNodeA, asked(kNodeA), {0, 1}, t0_ + milliseconds(5));
  broker_.expire_stacks(due - milliseconds(1));
  EXPECT_TRUE(got_.empty());
  broker_.expire_stacks(due);
  ASSERT_EQ(got_.size(), 1u);
  const std::string text = joined(got_[0]);
  EXPECT_NE(text.find("ranks 0-1: main thread sleeping"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks 2-3 (nb): no answer within 2 s"), std::string::npos) << text;
}

TEST_F(BrokerStacksTest, WithoutNodeAgentsTheAnswerComesAtOnce) {
  broker_.ask_stacks(done(), t0_);
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(joined(got_[0]), "no node agent is connected: no rank to read\n");
}

// At the step's first failure each node agent sends its survivors unasked
// (rdv::kStacksAtFailure) before ending them: merged into the failure's
// record, the report's and dp-top's, once per node; never before a failure.
TEST_F(BrokerStacksTest, TheSurvivorsAtTheFailureGoInTheReport) {
  nodes();
  answer(kNodeA, rdv::kStacksAtFailure, {0, 1}, t0_ + milliseconds(5));
  EXPECT_EQ(broker_.stats().report_json().find("main thread sleeping"), std::string::npos);
  broker_.on_disconnect(kNodeB, t0_ + milliseconds(10));  // nb lost: the step fails
  answer(kNodeA, rdv::kStacksAtFailure, {0, 1}, t0_ + milliseconds(20));
  answer(kNodeA, rdv::kStacksAtFailure, {0, 1, 2}, t0_ + milliseconds(30));  // once per node
  const proto::Stats s = broker_.stats();
  const std::string& json = s.report_json();
  EXPECT_NE(json.find("\"stacks\":[\"ranks 0-1: main thread sleeping"), std::string::npos) << json;
  EXPECT_EQ(json.find("ranks 0-2"), std::string::npos) << json;
  EXPECT_NE(s.text().find("at the first failure:\n  ranks 0-1: main thread sleeping"),
            std::string::npos)
      << s.text();
}

// Only a node agent reads ranks: another connection of the step (a tool's,
// with the step's secret) that answers, the round's ask or the failure's, is
// no node's read, and nothing it claims goes into dp-top's answer or the report.
TEST_F(BrokerStacksTest, AToolsAnswerIsNoNodesRead) {
  constexpr ConnId kRank = 3;
  nodes();
  hello(kRank, 0, proto::ROLE_AGENT);
  broker_.ask_stacks(done(), t0_);
  const uint64_t ask = asked(kNodeA);
  answer(kRank, ask, {0, 1, 2, 3}, t0_ + milliseconds(5));
  EXPECT_TRUE(got_.empty());  // still waiting for both nodes
  answer(kNodeA, ask, {0, 1}, t0_ + milliseconds(10));
  answer(kNodeB, ask, {2, 3}, t0_ + milliseconds(15));
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(joined(got_[0]).find("h0"), std::string::npos) << joined(got_[0]);
  broker_.on_disconnect(kNodeB, t0_ + milliseconds(20));  // the step fails
  answer(kRank, rdv::kStacksAtFailure, {0, 1, 2, 3}, t0_ + milliseconds(25));
  EXPECT_EQ(broker_.stats().report_json().find("main thread sleeping"), std::string::npos);
  answer(kNodeA, rdv::kStacksAtFailure, {0, 1}, t0_ + milliseconds(30));
  const std::string json = broker_.stats().report_json();
  EXPECT_NE(json.find("\"stacks\":[\"ranks 0-1: main thread sleeping"), std::string::npos) << json;
  EXPECT_EQ(json.find("h0"), std::string::npos) << json;
}

// The hang watch: with hang_timeout 8 s the daemon pushes a round every
// second; nodes that answer with the same sleeping ranks each time make a
// still step, named once on srun's stderr after 8 s, and the step runs on;
// with end_on_hang it is ended, named.
class BrokerWatchTest : public BrokerStacksTest {
 protected:
  Broker& watched(int end_on_hang) {
    auto c = config(4);
    c.limits.heartbeat_timeout = milliseconds(0);
    c.limits.hang_timeout = milliseconds(8'000);
    c.limits.end_on_hang = end_on_hang;
    return two_node_broker(c);
  }
  // The ticks from second `from` to `to`; each round answered by both nodes
  // at once, or by node A alone (b_answers false).
  // nccl: the ranks spin (CPU time grows: the stacks' watch sees work) and
  // their flight recorders say where they are: rank 1 never entered #22.
  void run(Broker& b, int from, int to, bool nccl = false, bool b_answers = true) {
    for (int ms = from * 1000; ms <= to * 1000; ms += 100) {
      const auto t = t0_ + milliseconds(ms);
      b.on_tick(t);
      b.expire_stacks(t);  // the server's tick does so too
      for (ConnId c : {kNodeA, kNodeB}) {
        if (c == kNodeB && !b_answers) continue;
        const auto& sent = other_out_.sent[c];
        if (sent.empty() || !sent.back().has_stacks_ask() ||
            sent.back().stacks_ask().ask() == last_ask_[c])
          continue;
        last_ask_[c] = sent.back().stacks_ask().ask();
        flight_asked_ = flight_asked_ || sent.back().stacks_ask().flight();
        proto::Request r;
        r.mutable_stacks_answer()->set_ask(last_ask_[c]);
        for (int rank : c == kNodeA ? std::vector<int>{0, 1} : std::vector<int>{2, 3}) {
          auto* m = r.mutable_stacks_answer()->add_ranks();
          m->set_rank(rank);
          m->set_pid(100 + rank);
          m->set_python("3.14.8");
          auto* th = m->add_threads();
          th->set_tid(100 + rank);
          auto* f = th->add_frames();
          f->set_function(rank == 3 ? "main" : "all_reduce");
          f->set_file(rank == 3 ? "/u/hang.py" : "/t/distributed_c10d.py");
          f->set_line(rank == 3 ? 21 : 3913);
          if (!nccl) continue;
          m->set_cpu_ticks(static_cast<uint64_t>(ms));
          auto* fr = r.mutable_stacks_answer()->add_flights();
          fr->set_rank(rank);
          fr->set_pid(100 + rank);
          auto* g = fr->add_groups();
          g->set_group("0");
          g->set_ranks("0-3");
          g->set_last_enqueued(rank == 1 ? 21 : 22);
          g->set_last_completed(21);
          g->set_op(rank == 1 ? "broadcast" : "all_reduce");
          g->set_pending(rank != 1);
          g->set_age_ms(ms);
        }
        b.on_frame(c, r.SerializeAsString(), t);
      }
    }
  }
  std::map<ConnId, uint64_t> last_ask_;
  bool flight_asked_ = false;
};

// NCCL ranks spin while they wait: the stacks' rule sees work, the flight
// recorders name the rank that never entered and the collective.
TEST_F(BrokerWatchTest, SpinningNcclRanksAreNamedFromTheirFlightRecorders) {
  Broker& b = watched(0);
  run(b, 0, 7, true);
  EXPECT_TRUE(other_out_.notices.empty()) << other_out_.notices.front();
  EXPECT_TRUE(flight_asked_) << "the watch's rounds ask for the flight recorders";
  run(b, 7, 30, true);
  ASSERT_EQ(other_out_.notices.size(), 1u);
  const std::string& line = other_out_.notices[0];
  EXPECT_EQ(line.rfind("slurm-dp: step 1.0: hang: rank 1 (na, pid 101) never entered all_reduce "
                       "#22 (process group 0); ranks 0, 2, 3 wait in it for 8 s (rank 1 is at "
                       "#21) (flight recorder; the site's hang_timeout=8 s)",
                       0),
            0u)
      << line;
  EXPECT_FALSE(b.aborted());
  // dp-top --stacks shows where each NCCL rank is.
  b.ask_stacks(done(), t0_ + milliseconds(30'050));
  run(b, 30, 31, true);
  ASSERT_FALSE(got_.empty());
  const std::string view = joined(got_.back());
  EXPECT_NE(view.find("flight recorder, process group 0: rank 1 done #21 (broadcast); ranks "
                      "0,2-3 wait in all_reduce #22 for 30 s"),
            std::string::npos)
      << view;
}

TEST_F(BrokerWatchTest, AStillStepIsNamedOnceAndRunsOn) {
  Broker& b = watched(0);
  run(b, 0, 7);
  EXPECT_TRUE(other_out_.notices.empty()) << other_out_.notices.front();
  EXPECT_GE(last_ask_[kNodeA], 6u) << "a round every second";
  run(b, 7, 30);
  ASSERT_EQ(other_out_.notices.size(), 1u);
  const std::string& line = other_out_.notices[0];
  EXPECT_EQ(line.rfind("slurm-dp: step 1.0: hang: no rank has made progress for ", 0), 0u) << line;
  EXPECT_NE(line.find("rank 3 (nb, pid 103): main hang.py:21; ranks 0-2: all_reduce "
                      "distributed_c10d.py:3913"),
            std::string::npos)
      << line;
  EXPECT_FALSE(b.aborted());
  EXPECT_NE(b.stats().text().find("hang at "), std::string::npos) << b.stats().text();
}

TEST_F(BrokerWatchTest, EndOnHangEndsTheStepNamingTheOddRank) {
  Broker& b = watched(1);
  run(b, 0, 12);
  ASSERT_TRUE(b.aborted());
  EXPECT_EQ(b.abort_cause()->how, AbortCause::How::hang);
  EXPECT_EQ(b.abort_cause()->rank, 3);
  EXPECT_EQ(b.abort_cause()->host, "nb");
  EXPECT_NE(b.report().failure()->message.find("verdict hang"), std::string::npos);
}

// Unknown is not stuck: node B never answers, so its ranks are unknown; the
// step is named after twice the timeout as one whose ranks could not be
// read, and even with end_on_hang it runs on.
TEST_F(BrokerWatchTest, RanksThatCannotBeReadAreNamedNeverEnded) {
  Broker& b = watched(1);
  run(b, 0, 1);
  run(b, 1, 14, false, false);
  EXPECT_TRUE(other_out_.notices.empty()) << other_out_.notices.front();
  run(b, 14, 40, false, false);
  ASSERT_EQ(other_out_.notices.size(), 1u);
  const std::string& line = other_out_.notices[0];
  EXPECT_NE(line.find("hang: no rank that could be read has made progress for "), std::string::npos)
      << line;
  EXPECT_NE(line.find("ranks 2-3 could not be read"), std::string::npos) << line;
  EXPECT_NE(line.find("a rank that cannot be read is never judged stuck"), std::string::npos)
      << line;
  EXPECT_FALSE(b.aborted());
}

}  // namespace
}  // namespace dp::daemon
