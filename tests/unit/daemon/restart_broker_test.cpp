// The broker's restarts in place (--dp-spares, --dp-max-restarts): a lost
// node's place goes to the spare, every node agent stops, then starts its
// programs again with its (new) ranks; budgets and spares that run out end
// the step as before, naming why; at the end the spares are released and a
// lost node's tasks ended in Slurm.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "broker_fixture.hpp"
#include "dp/master_port.hpp"
#include "dp/torchstore/rendezvous_state.hpp"
#include "protocol_version.hpp"
#include "step_ports_value.hpp"

namespace dp::daemon::test {
namespace {

constexpr ConnId kA = 1, kB = 2, kSpare = 3;

class RestartBrokerTest : public BrokerTest {
 protected:
  RestartBrokerTest() : BrokerTest(4) {}
  // A fresh broker and recorder, for one more case in the same test.
  void start_again() {
    b_.reset();
    out_ = Recorder{};
    SetUp();
  }
  void SetUp() override {
    BrokerConfig c = config(4);
    c.limits.nodes = 3;
    c.limits.spares = 1;
    c.limits.tasks_per_node = 2;
    c.limits.max_restarts = max_restarts_;
    b_.emplace(c, out_, t0_);
    ASSERT_EQ(node(kA, 0, {0, 1}, "na").code(), proto::OK);
    ASSERT_EQ(node(kB, 1, {2, 3}, "nb").code(), proto::OK);
    ASSERT_EQ(node(kSpare, 2, {}, "nc").code(), proto::OK);
  }
  // A node agent's hello: its node index in the rank field, its ranks.
  proto::Response node(ConnId c, int index, const std::vector<int32_t>& ranks,
                       const std::string& host) {
    b_->on_connect(c, t0_);
    send(c, dp::test::signed_hello(kSecret, kNonce, proto::ROLE_NODE, index, 0, host, ranks));
    return out_.last(c);
  }
  void send(ConnId c, const proto::Request& r) { b_->on_frame(c, r.SerializeAsString(), t0_); }
  // The last restart push a node agent got, or none.
  std::optional<proto::Restart> restart_push(ConnId c) {
    for (auto it = out_.sent[c].rbegin(); it != out_.sent[c].rend(); ++it)
      if (it->id() == 0 && it->has_restart()) return it->restart();
    return std::nullopt;
  }
  void ready(ConnId c, proto::Restart::Phase phase, uint64_t generation = 1) {
    proto::Request r;
    r.mutable_restart_ready()->set_generation(generation);
    r.mutable_restart_ready()->set_phase(phase);
    send(c, r);
  }
  void goodbye(ConnId c, std::optional<int> rank) {
    proto::Request r;
    r.set_id(9);
    if (rank) r.mutable_goodbye()->set_rank(*rank);
    else r.mutable_goodbye();
    send(c, r);
  }
  void rank_lost(ConnId c, int rank, int exit_code) {
    proto::Request r;
    r.set_id(8);
    r.mutable_rank_lost()->set_rank(rank);
    r.mutable_rank_lost()->set_exit_code(exit_code);
    send(c, r);
  }
  void tick(int ms) { b_->on_tick(t0_ + milliseconds(ms)); }
  // Every 100 ms, as the daemon does (a jump reads as a stopped daemon).
  void ticks(int from, int to) {
    for (int ms = from + 100; ms <= to; ms += 100) tick(ms);
  }
  int max_restarts_ = 3;
  std::optional<Broker> b_;
};

TEST_F(RestartBrokerTest, ALostNodesPlaceGoesToTheSpareAndEveryProgramStartsAgain) {
  b_->on_disconnect(kB, t0_);
  EXPECT_FALSE(b_->aborted());
  ASSERT_TRUE(restart_push(kA));
  EXPECT_EQ(restart_push(kA)->phase(), proto::Restart::STOP);
  EXPECT_EQ(restart_push(kA)->generation(), 1u);
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
  ready(kA, proto::Restart::STOP);
  EXPECT_EQ(restart_push(kA)->phase(), proto::Restart::STOP);  // the spare has not answered
  ready(kSpare, proto::Restart::STOP);
  // The lost node's keepers end their programs as its agent's link closes:
  // its spare starts a second after the drop, not before.
  tick(900);
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
  tick(1000);
  const auto a = restart_push(kA), spare = restart_push(kSpare);
  ASSERT_TRUE(a && spare);
  EXPECT_EQ(a->phase(), proto::Restart::START);
  EXPECT_EQ(a->node_rank(), 0);
  EXPECT_EQ(a->restart_count(), 1u);
  EXPECT_EQ(spare->phase(), proto::Restart::START);
  EXPECT_EQ(spare->node_rank(), 1);
  EXPECT_EQ(std::vector<int32_t>(spare->node_ranks().begin(), spare->node_ranks().end()),
            (std::vector<int32_t>{2, 3}));
  ready(kA, proto::Restart::START);
  ready(kSpare, proto::Restart::START);
  // The spare now speaks for ranks 2 and 3: their goodbyes count.
  for (int r : {0, 1}) goodbye(kA, r);
  for (int r : {2, 3}) goodbye(kSpare, r);
  tick(100);
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::DONE);
  ASSERT_EQ(out_.notices.size(), 1u);
  EXPECT_NE(out_.notices[0].find("restart 1 of 3: node nb lost"), std::string::npos)
      << out_.notices[0];
  EXPECT_NE(out_.notices[0].find("spare nc takes node rank 1 (ranks 2-3), 0 spare(s) left"),
            std::string::npos)
      << out_.notices[0];
  // Every live node left: the lost node's tasks still hold srun, so Slurm ends them.
  EXPECT_TRUE(out_.slurm_ends.empty());
  goodbye(kA, std::nullopt);
  goodbye(kSpare, std::nullopt);
  tick(200);
  ASSERT_EQ(out_.slurm_ends.size(), 1u);
  EXPECT_FALSE(b_->aborted());
  EXPECT_EQ(b_->report().restarts().size(), 1u);
  EXPECT_EQ(b_->report().spares_left(), 0);
}

// A short stall: the agent links again while its old link still seems open.
// What the restart waits for from it goes again on the new link, so the
// stall costs no node (the old link's STOP or START may never have arrived).
TEST_F(RestartBrokerTest, AnAgentThatLinksAgainMidRestartIsAskedAgain) {
  constexpr ConnId kA2 = 10, kA3 = 11;
  b_->on_disconnect(kB, t0_);
  ASSERT_EQ(restart_push(kA)->phase(), proto::Restart::STOP);
  ASSERT_EQ(node(kA2, 0, {0, 1}, "na").code(), proto::OK);
  ASSERT_TRUE(restart_push(kA2));
  EXPECT_EQ(restart_push(kA2)->phase(), proto::Restart::STOP);
  EXPECT_EQ(restart_push(kA2)->generation(), 1u);
  ready(kA2, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  tick(1000);
  ASSERT_EQ(restart_push(kA2)->phase(), proto::Restart::START);
  ASSERT_EQ(node(kA3, 0, {0, 1}, "na").code(), proto::OK);
  const auto again = restart_push(kA3);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->phase(), proto::Restart::START);
  EXPECT_EQ(again->node_rank(), 0);
  EXPECT_EQ(again->restart_count(), 1u);
  EXPECT_EQ(std::vector<int32_t>(again->node_ranks().begin(), again->node_ranks().end()),
            (std::vector<int32_t>{0, 1}));
  ready(kA3, proto::Restart::START);
  ready(kSpare, proto::Restart::START);
  // Running: a link again now repeats nothing, and no node was lost meanwhile.
  ASSERT_EQ(node(20, 0, {0, 1}, "na").code(), proto::OK);
  EXPECT_FALSE(restart_push(20));
  EXPECT_FALSE(b_->aborted());
  for (int r : {0, 1}) goodbye(20, r);
  for (int r : {2, 3}) goodbye(kSpare, r);
  tick(1100);
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::DONE);
  EXPECT_EQ(b_->report().restarts().size(), 1u);
  EXPECT_EQ(b_->report().spares_left(), 0);
}

TEST_F(RestartBrokerTest, TheLostNodesAgentIsRefusedWhenItComesBack) {
  b_->on_disconnect(kB, t0_);
  EXPECT_EQ(node(20, 1, {2, 3}, "nb").code(), proto::ABORTED);
}

TEST_F(RestartBrokerTest, ASecondLossWithoutASpareEndsTheStepNamingWhy) {
  b_->on_disconnect(kB, t0_);
  ready(kA, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  ready(kA, proto::Restart::START);
  ready(kSpare, proto::Restart::START);
  b_->on_disconnect(kA, t0_);
  ASSERT_TRUE(b_->aborted());
  EXPECT_NE(b_->abort_cause()->message.find("no spare node is left"), std::string::npos)
      << b_->abort_cause()->message;
}

TEST_F(RestartBrokerTest, ALossWhileProgramsStopTakesAnotherSpareOrEnds) {
  b_->on_disconnect(kB, t0_);
  b_->on_disconnect(kSpare, t0_);  // the spare itself, before it started anything
  ASSERT_TRUE(b_->aborted());
  EXPECT_NE(b_->abort_cause()->message.find("no spare node is left"), std::string::npos);
}

TEST_F(RestartBrokerTest, AFailedProgramRestartsInPlaceWithinTheBudget) {
  rank_lost(kA, 1, 3);
  EXPECT_FALSE(b_->aborted());
  ASSERT_TRUE(restart_push(kB));
  EXPECT_EQ(restart_push(kB)->phase(), proto::Restart::STOP);
  for (ConnId c : {kA, kB, kSpare}) ready(c, proto::Restart::STOP);
  ASSERT_EQ(restart_push(kB)->phase(), proto::Restart::START);
  EXPECT_EQ(restart_push(kB)->node_rank(), 1);  // in place: every node keeps its ranks
  EXPECT_FALSE(restart_push(kSpare) && restart_push(kSpare)->phase() == proto::Restart::START);
  // A failure while the programs stop is the stop's own doing.
  for (ConnId c : {kA, kB}) ready(c, proto::Restart::START);
  rank_lost(kA, 0, 3);
  EXPECT_FALSE(b_->aborted());
}

// Rank 0's node lost: its peers' collectives fail at once, and one of them
// may be reported before the daemon hears that node's link drop. The loss
// then joins the in-place restart under way and the spare takes its place.
TEST_F(RestartBrokerTest, ANodeLostWhileAFailedProgramStopsTheOthersTakesTheSpare) {
  rank_lost(kB, 2, 1);
  ASSERT_TRUE(restart_push(kA));
  EXPECT_EQ(restart_push(kA)->generation(), 1u);
  ready(kB, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  b_->on_disconnect(kA, t0_);
  EXPECT_FALSE(b_->aborted());
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
  EXPECT_EQ(restart_push(kSpare)->generation(), 2u);
  for (ConnId c : {kB, kSpare}) ready(c, proto::Restart::STOP, 2);
  tick(1000);
  const auto b = restart_push(kB), spare = restart_push(kSpare);
  ASSERT_TRUE(b && spare);
  EXPECT_EQ(b->phase(), proto::Restart::START);
  EXPECT_EQ(b->node_rank(), 1);
  EXPECT_EQ(spare->phase(), proto::Restart::START);
  EXPECT_EQ(spare->node_rank(), 0);
  for (ConnId c : {kB, kSpare}) ready(c, proto::Restart::START, 2);
  tick(61'000);
  ASSERT_EQ(out_.notices.size(), 1u);
  EXPECT_NE(out_.notices[0].find("restart 1 of 3: node na lost (node_lost: its agent's link to "
                                 "srun's host dropped); spare nc takes node rank 0 (ranks 0-1)"),
            std::string::npos)
      << out_.notices[0];
}

// The same node never heard to go (its link silent, not closed): it does not
// answer the stop, and the stop's bound makes it lost.
TEST_F(RestartBrokerTest, ANodeThatNeverAnswersTheStopIsLostAndTheSpareTakesItsPlace) {
  rank_lost(kB, 2, 1);
  ready(kB, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  ticks(0, 15'000);  // the stop's bound: na is lost
  EXPECT_FALSE(b_->aborted());
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->generation(), 2u);
  for (ConnId c : {kB, kSpare}) ready(c, proto::Restart::STOP, 2);
  // Closed by the daemon, its agent may not know yet: its programs count as
  // dead once it was unheard for fence_after and a margin (heard at t0).
  ticks(15'000, 16'900);
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
  ticks(16'900, 17'000);
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::START);
  EXPECT_EQ(restart_push(kSpare)->node_rank(), 0);
}

// A node agent that leaves during a restart with no drop heard (here its
// goodbye) answers nothing: the restart goes on without it at the next tick,
// and its ranks, which cannot start again there, go to the spare.
TEST_F(RestartBrokerTest, ANodeThatLeftUnheardDuringARestartIsLostNotWaitedFor) {
  rank_lost(kB, 2, 1);
  goodbye(kA, std::nullopt);
  ready(kB, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  tick(100);
  EXPECT_FALSE(b_->aborted());
  ASSERT_TRUE(restart_push(kSpare));
  EXPECT_EQ(restart_push(kSpare)->generation(), 2u);
  EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
  for (ConnId c : {kB, kSpare}) ready(c, proto::Restart::STOP, 2);
  tick(1100);
  ASSERT_EQ(restart_push(kSpare)->phase(), proto::Restart::START);
  EXPECT_EQ(restart_push(kSpare)->node_rank(), 0);
  EXPECT_EQ(restart_push(kB)->node_rank(), 1);
  for (ConnId c : {kB, kSpare}) ready(c, proto::Restart::START, 2);
  tick(61'000);
  ASSERT_EQ(out_.notices.size(), 1u);
  EXPECT_NE(out_.notices[0].find("node na lost"), std::string::npos) << out_.notices[0];
}

TEST_F(RestartBrokerTest, TheProgramsKeysGoAtARestartButTheAgentsExchangeStays) {
  proto::Request set;
  set.set_id(5);
  set.set_space(proto::SPACE_TORCH);
  set.mutable_set()->set_key("/rank_0");
  set.mutable_set()->set_value("addr");
  send(kA, set);
  proto::Request port;
  port.set_id(6);
  rdv::to_proto(StepPortsValue{29500}, *port.mutable_publish_ports()->mutable_value());
  send(kA, port);
  EXPECT_EQ(b_->stats().keys(), 2u);
  b_->on_disconnect(kB, t0_);
  ready(kA, proto::Restart::STOP);
  ready(kSpare, proto::Restart::STOP);
  tick(1000);
  EXPECT_EQ(b_->stats().keys(), 1u);
}

// A node whose task ended for good while its agent still speaks: the agent
// hears FENCE (its programs' trees killed), and the spare starts once it
// says they are dead; without its answer, once it was unheard for the
// site's fence_after (and a heartbeat's margin).
TEST_F(RestartBrokerTest, ALostNodesSpareStartsOnlyOnceItsProgramsAreKnownDead) {
  for (bool answer : {true, false}) {
    SCOPED_TRACE(answer ? "the agent answers" : "the agent is silent");
    start_again();
    proto::Request gone;
    gone.set_id(8);
    gone.mutable_rank_lost()->set_rank(2);
    gone.mutable_rank_lost()->set_exit_code(1);
    gone.mutable_rank_lost()->set_task_gone(true);
    send(kB, gone);
    ASSERT_FALSE(b_->aborted());
    ASSERT_TRUE(restart_push(kB));
    EXPECT_EQ(restart_push(kB)->phase(), proto::Restart::FENCE);
    ready(kA, proto::Restart::STOP);
    ready(kSpare, proto::Restart::STOP);
    tick(100);
    EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
    EXPECT_EQ(std::count(out_.closed.begin(), out_.closed.end(), kB), 0);
    if (answer) {
      ready(kB, proto::Restart::FENCE, restart_push(kB)->generation());
    } else {
      tick(16'900);  // heard at t0: fence_after 15 s and a 2 s margin
      EXPECT_EQ(restart_push(kSpare)->phase(), proto::Restart::STOP);
      tick(17'000);
    }
    EXPECT_EQ(std::count(out_.closed.begin(), out_.closed.end(), kB), 1);
    ASSERT_EQ(restart_push(kSpare)->phase(), proto::Restart::START);
    EXPECT_EQ(restart_push(kSpare)->node_rank(), 1);
  }
}

// The spare's program fails at once twice in a row (a bad GPU): the node is
// retired (FENCE, its place to the next spare) instead of the budget being
// spent on it; here the first start's node nb, then the spare in its place.
TEST_F(RestartBrokerTest, ANodeWhoseProgramFailsAtOnceTwiceIsRetiredForTheNextSpare) {
  rank_lost(kB, 2, 1);
  for (ConnId c : {kA, kB, kSpare}) ready(c, proto::Restart::STOP);
  ASSERT_EQ(restart_push(kB)->phase(), proto::Restart::START);
  EXPECT_EQ(restart_push(kB)->node_rank(), 1);  // in place: the first failure
  for (ConnId c : {kA, kB}) ready(c, proto::Restart::START);
  rank_lost(kB, 3, 1);  // at once again, on the same node
  ASSERT_FALSE(b_->aborted());
  EXPECT_EQ(restart_push(kB)->phase(), proto::Restart::FENCE);
  for (ConnId c : {kA, kSpare}) ready(c, proto::Restart::STOP, 2);
  ready(kB, proto::Restart::FENCE, restart_push(kB)->generation());
  ASSERT_EQ(restart_push(kSpare)->phase(), proto::Restart::START);
  EXPECT_EQ(restart_push(kSpare)->node_rank(), 1);
  EXPECT_EQ(restart_push(kSpare)->restart_count(), 2u);
}

// The same failures with the programs' rendezvous (every PyTorch store
// client up: the agents count TCPStore's handshakes, two to a node's folded
// ADD) and 10 s of running between them restart in place: no node's fault.
// ADDs that announce nobody, whatever their keys, are no rendezvous.
TEST_F(RestartBrokerTest, AFailureAfterTheProgramsMetAndRanIsNoNodesFault) {
  for (bool announced : {true, false}) {
    SCOPED_TRACE(announced ? "the clients announced" : "keys alone");
    start_again();
    rank_lost(kB, 2, 1);
    for (ConnId c : {kA, kB, kSpare}) ready(c, proto::Restart::STOP);
    for (ConnId c : {kA, kB}) ready(c, proto::Restart::START);
    for (ConnId c : {kA, kB}) {
      proto::Request add;
      add.set_id(20 + c);
      add.set_space(proto::SPACE_TORCH);
      add.mutable_add()->set_key(announced ? "init/" : "/default_pg/0//cuda//init/");
      add.mutable_add()->set_delta(2);
      if (announced) add.mutable_add()->set_workers(2);
      send(c, add);
    }
    tick(11'000);
    proto::Request lost;
    lost.set_id(8);
    lost.mutable_rank_lost()->set_rank(3);
    lost.mutable_rank_lost()->set_exit_code(1);
    b_->on_frame(kB, lost.SerializeAsString(), t0_ + milliseconds(11'000));
    ASSERT_FALSE(b_->aborted());
    EXPECT_EQ(restart_push(kB)->phase(), announced ? proto::Restart::STOP : proto::Restart::FENCE);
    if (announced) {
      EXPECT_EQ(restart_push(kB)->generation(), 2u);
    }
  }
}

// torchrun per node (--restart-programs=0): the launchers restart their own
// workers, a launcher waiting in their rendezvous takes a lost node's place.
// The lost node's launcher is aged in that rendezvous at once, so the others
// need not wait out its keep-alive; the writes of the state said whose it is.
class LauncherRestartTest : public RestartBrokerTest {
 protected:
  void SetUp() override {
    BrokerConfig c = config(3);  // the waiting launcher is a task of its own
    c.limits.nodes = 3;
    c.limits.spares = 1;
    c.limits.tasks_per_node = 1;
    c.limits.restart_programs = 0;
    b_.emplace(c, out_, t0_);
    ASSERT_EQ(node(kA, 0, {0}, "na").code(), proto::OK);
    ASSERT_EQ(node(kB, 1, {1}, "nb").code(), proto::OK);
    ASSERT_EQ(node(kSpare, 2, {2}, "nc").code(), proto::OK);
    std::ifstream in(std::string(DP_TORCHRUN_STATE_FIXTURES) + "/torch-2.14.b64");
    std::stringstream text;
    text << in.rdbuf();
    state_ = text.str();
    while (!state_.empty() && state_.back() == '\n') state_.pop_back();
  }
  // The fixture's state (launchers n0:4000, n1:4001, n2:4002) with `names` aged.
  std::string aged(const std::vector<std::string>& names) {
    auto st = torchstore::read_rendezvous_state(state_);
    EXPECT_TRUE(st);
    int n = 0;
    return torchstore::with_heartbeats_expired(*st, names, n);
  }
  proto::Response torch(ConnId c, proto::Request r) {
    r.set_id(++id_);
    r.set_space(proto::SPACE_TORCH);
    send(c, r);
    return out_.last(c);
  }
  std::string cas(ConnId c, const std::string& expected, const std::string& desired) {
    proto::Request r;
    r.mutable_compare_and_set()->set_key(kKey);
    r.mutable_compare_and_set()->set_expected(expected);
    r.mutable_compare_and_set()->set_desired(desired);
    return torch(c, r).value();
  }
  std::string stored(ConnId via = kA) {
    proto::Request r;
    r.mutable_get()->set_key(kKey);
    return torch(via, r).value();
  }
  static constexpr const char* kKey = "/torch.rendezvous.slurm-dp";  // as torchrun sends it
  const std::string n0 = "n0.cluster:4000", n1 = "n1.cluster:4001", n2 = "n2.cluster:4002";
  std::string state_;
  uint64_t id_ = 100;
};

TEST_F(LauncherRestartTest, ALostNodesLauncherIsAgedInTheRendezvousAtOnce) {
  // Each node's launcher refreshes its own heartbeat; the first write adds
  // all three (aged), so the spare's node holds none of them for long.
  const std::string v0 = aged({n0, n1, n2}), v1 = aged({n1, n2}), v2 = aged({n2});
  EXPECT_EQ(cas(kSpare, "", v0), v0);
  EXPECT_EQ(cas(kA, v0, v1), v1);
  EXPECT_EQ(cas(kB, v1, v2), v2);
  EXPECT_EQ(cas(kA, v0, state_), v2);  // a failed compare-and-set says nothing of its writer
  EXPECT_EQ(cas(kSpare, v2, state_), state_);
  b_->on_disconnect(kB, t0_);
  ASSERT_FALSE(b_->aborted());
  ASSERT_EQ(out_.notices.size(), 1u);
  EXPECT_NE(out_.notices[0].find("a launcher waiting in torchrun's rendezvous takes its place"),
            std::string::npos)
      << out_.notices[0];
  // Node nb's launcher (n1:4001, refreshed by nb's write) aged; the others kept.
  EXPECT_EQ(stored(), aged({n1}));
}

// A node's launcher is learnt once (torchrun restarts its workers, not
// itself): its keep-alives are not read again.
TEST_F(LauncherRestartTest, ANodesLauncherIsLearntOnce) {
  const std::string v1 = aged({n1, n2}), v2 = aged({n1});
  EXPECT_EQ(cas(kA, "", v1), v1);          // kA's first write: n0 (and, new to it, n1 and n2)
  EXPECT_EQ(cas(kB, v1, v2), v2);          // kB moves n2's heartbeat: n2 is kB's
  EXPECT_EQ(cas(kA, v2, state_), state_);  // kA moves n1's: not read, kA is known
  b_->on_disconnect(kA, t0_);
  ASSERT_FALSE(b_->aborted());
  EXPECT_EQ(stored(kB), aged({n0, n1}));  // kA's as learnt: n0 and n1, not n2
}

TEST_F(LauncherRestartTest, ARendezvousWithoutTheLostNodesLauncherIsLeftAlone) {
  const std::string v1 = aged({n1, n2});
  EXPECT_EQ(cas(kA, "", v1), v1);  // only kA wrote: every launcher is its node's
  b_->on_disconnect(kB, t0_);
  ASSERT_FALSE(b_->aborted());
  EXPECT_EQ(stored(), v1);
}

class RestartBudgetTest : public RestartBrokerTest {
 protected:
  RestartBudgetTest() { max_restarts_ = 1; }
};

TEST_F(RestartBudgetTest, ASpentBudgetEndsTheStepWithTheFailureAndItsCause) {
  rank_lost(kA, 1, 3);
  for (ConnId c : {kA, kB, kSpare}) ready(c, proto::Restart::STOP);
  for (ConnId c : {kA, kB}) ready(c, proto::Restart::START);
  rank_lost(kB, 2, 3);
  ASSERT_TRUE(b_->aborted());
  const std::string& m = b_->abort_cause()->message;
  EXPECT_NE(m.find("rank 2 (host nb) exited with code 3"), std::string::npos) << m;
  EXPECT_NE(m.find("--dp-max-restarts=1"), std::string::npos) << m;
}

}  // namespace
}  // namespace dp::daemon::test
