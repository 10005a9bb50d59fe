// Node agents (ROLE_NODE) in the broker, without sockets: a step of
// 5 ranks as node "na" (ranks 0,1), node "nb" (ranks 2,3) and rank 4 direct.
#include <algorithm>

#include "broker_fixture.hpp"
#include "dp/master_port.hpp"
#include "step_ports_value.hpp"
#include "step_report.hpp"  // Json

#include <signal.h>

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture

constexpr ConnId kRank4 = 3;

class NodeBrokerTest : public BrokerTest {
 protected:
  NodeBrokerTest() : BrokerTest(5) {}
  proto::Response node_hello(ConnId c, const std::vector<int32_t>& ranks, const std::string& host) {
    broker_.on_connect(c, t0_);
    frame(c, node_hello_req(ranks, host), t0_);
    return out_.last(c);
  }
  void step() {
    ASSERT_EQ(node_hello(kNodeA, {0, 1}, "na").code(), proto::OK);
    ASSERT_EQ(node_hello(kNodeB, {2, 3}, "nb").code(), proto::OK);
    hello(kRank4, 4);
  }
  void barrier(ConnId c, std::vector<int32_t> ranks, uint64_t id = 20) {
    proto::Request b;
    b.set_id(id);
    b.mutable_barrier()->set_name("start");
    for (int32_t r : ranks) b.mutable_barrier()->add_ranks(r);
    frame(c, b, t0_);
  }
  void node_heartbeat(ConnId c, const std::vector<int32_t>& ranks, Clock::time_point t) {
    proto::Request hb;
    for (int32_t r : ranks) {
      auto* rp = hb.mutable_heartbeat()->add_ranks();
      rp->set_rank(r);
      rp->mutable_progress()->set_ops_done(7);
    }
    frame(c, hb, t);
  }
  void goodbye(ConnId c, std::optional<int> rank) {
    proto::Request g;
    g.set_id(30);
    g.mutable_goodbye();
    if (rank) g.mutable_goodbye()->set_rank(*rank);
    frame(c, g, t0_);
  }
  void rank_lost(ConnId c, int rank, std::optional<int> code, std::optional<int> sig,
                 const std::string& detail) {
    proto::Request l;
    l.set_id(40);
    auto* m = l.mutable_rank_lost();
    m->set_rank(rank);
    if (code) m->set_exit_code(*code);
    if (sig) m->set_signal(*sig);
    m->set_detail(detail);
    frame(c, l, t0_);
  }
  std::string failure() const {
    return broker_.report().failure() ? broker_.report().failure()->message : "";
  }
};

TEST_F(NodeBrokerTest, ANodeHelloRegistersAllItsRanks) {
  step();
  const proto::Stats s = broker_.stats();
  EXPECT_EQ(s.connections(), 3u);      // real connections
  EXPECT_EQ(s.ranks_connected(), 5u);  // ranks, including those behind node agents
  EXPECT_NE(s.text().find("nodes_connected 2\n"), std::string::npos) << s.text();
  EXPECT_NE(s.report_json().find("\"nodes_connected\":2"), std::string::npos);
  EXPECT_EQ(broker_.liveness().slot(3).host, "nb");
}

TEST_F(NodeBrokerTest, OtherUsersRefusedByTheAgentsStoresAreCountedInTheReport) {
  step();
  proto::Request hb;
  hb.mutable_heartbeat()->set_store_strangers(2);
  frame(kNodeA, hb, t0_);
  hb.mutable_heartbeat()->set_store_strangers(3);  // a count so far, not an increment
  frame(kNodeA, hb, t0_);
  hb.mutable_heartbeat()->set_store_strangers(1);
  frame(kNodeB, hb, t0_);
  const proto::Stats s = broker_.stats();
  EXPECT_NE(s.text().find("store_strangers_refused 4\n"), std::string::npos) << s.text();
  EXPECT_NE(s.report_json().find("\"store_strangers_refused\":4"), std::string::npos)
      << s.report_json();
}

// The agents' refusals of their own clients' requests: counted by node (a
// count so far), the first lines kept for srun's end, and no verdict.
TEST_F(NodeBrokerTest, StoreRequestsTheAgentsRefusedAreCountedAndNamed) {
  step();
  proto::Request m;
  m.mutable_store_refused()->set_refused(1);
  m.mutable_store_refused()->set_line("refused rank 1 (pid 42): SET of key '/huge' ...");
  frame(kNodeA, m, t0_);
  m.mutable_store_refused()->set_refused(2);  // past the node's first lines: a count only
  m.mutable_store_refused()->clear_line();
  frame(kNodeA, m, t0_);
  m.mutable_store_refused()->set_refused(1);
  m.mutable_store_refused()->set_line("refused rank 2 (pid 43): bad\x1b[2Jbytes");
  frame(kNodeB, m, t0_);
  frame(kRank4, m, t0_);  // only a node agent serves a store: not counted
  const proto::Stats s = broker_.stats();
  EXPECT_NE(s.text().find("store_requests_refused 3\n"), std::string::npos) << s.text();
  EXPECT_NE(s.report_json().find("\"store_requests_refused\":3"), std::string::npos);
  ASSERT_EQ(s.store_refusals_size(), 2);
  EXPECT_EQ(s.store_refusals(0),
            "PyTorch's store on host na: refused rank 1 (pid 42): SET of key '/huge' ...");
  EXPECT_EQ(s.store_refusals(1),
            "PyTorch's store on host nb: refused rank 2 (pid 43): bad\\x1b[2Jbytes");
  EXPECT_FALSE(broker_.aborted());
}

// A node agent's over-limit request is refused under its id; the node's
// link, and so the step, lives on (issue 43: one large value ended a step).
TEST_F(NodeBrokerTest, ANodesOverLimitRequestIsRefusedAndItsLinkStays) {
  step();
  proto::Request big;
  big.set_id(55);
  big.set_space(proto::SPACE_TORCH);
  big.mutable_set()->set_key("/huge");
  std::string frame_bytes;
  big.mutable_set()->set_value(std::string(64, 'v'));
  ASSERT_TRUE(rdv::append_frame(big, frame_bytes));
  const uint32_t limit = broker_.max_frame_bytes(kNodeA);
  const std::string_view head(frame_bytes.data() + rdv::kFrameHeaderBytes, 16);
  EXPECT_TRUE(broker_.on_oversized_frame(kNodeA, limit + 1, limit, head));
  EXPECT_EQ(out_.last(kNodeA).id(), 55u);
  EXPECT_EQ(out_.last(kNodeA).code(), proto::LIMIT);
  EXPECT_NE(out_.last(kNodeA).message().find("the connection stays"), std::string::npos);
  EXPECT_FALSE(broker_.aborted());
  EXPECT_TRUE(broker_.knows(kNodeA));
  // Before hello, the connection is not trusted with more: closed.
  broker_.on_connect(9, t0_);
  EXPECT_FALSE(broker_.on_oversized_frame(9, 1u << 30, 4096));
  EXPECT_FALSE(broker_.knows(9));
}

TEST_F(NodeBrokerTest, ANodeHelloIsValidated) {
  ASSERT_EQ(node_hello(kNodeA, {0, 1}, "na").code(), proto::OK);
  EXPECT_EQ(node_hello(10, {}, "x").code(), proto::INVALID_ARGUMENT);
  EXPECT_EQ(node_hello(11, {3, 2}, "x").code(), proto::INVALID_ARGUMENT);
  EXPECT_NE(out_.last(11).message().find("ascending"), std::string::npos);
  EXPECT_EQ(node_hello(12, {2, 5}, "x").code(), proto::INVALID_ARGUMENT);
  EXPECT_EQ(node_hello(13, {1, 2}, "x").code(), proto::CONFLICT);
  EXPECT_NE(out_.last(13).message().find("rank 1 is already connected from host na"),
            std::string::npos)
      << out_.last(13).message();
  hello(kRank4, 4);
  EXPECT_EQ(node_hello(14, {3, 4}, "x").code(), proto::CONFLICT);
  // A rank claims a rank a node holds.
  broker_.on_connect(15, t0_);
  frame(15, hello_req(0, proto::ROLE_RANK, "h0"), t0_);
  EXPECT_EQ(out_.last(15).code(), proto::CONFLICT);
  // The proof covers the rank list: another list under the same proof is refused.
  broker_.on_connect(16, t0_);
  proto::Request forged = node_hello_req({2}, "x");
  forged.mutable_hello()->add_node_ranks(3);
  frame(16, forged, t0_);
  EXPECT_EQ(out_.last(16).code(), proto::UNAUTHORIZED);
  for (ConnId c : {10, 11, 12, 13, 14, 15, 16}) EXPECT_FALSE(broker_.knows(c));
  EXPECT_FALSE(broker_.aborted());
}

TEST_F(NodeBrokerTest, ABarrierFoldsANodesRanksWithDirectRanks) {
  step();
  barrier(kNodeA, {3});  // not its rank
  EXPECT_EQ(out_.last(kNodeA).code(), proto::INVALID_ARGUMENT);
  barrier(kNodeA, {});
  EXPECT_EQ(out_.last(kNodeA).code(), proto::INVALID_ARGUMENT);
  barrier(kNodeA, {1, 0}, 21);
  barrier(kNodeB, {2, 3}, 22);
  barrier(kNodeB, {2}, 23);  // rank 2 again
  EXPECT_EQ(out_.last(kNodeB).code(), proto::CONFLICT);
  const size_t before_a = out_.sent[kNodeA].size();
  barrier(kRank4, {}, 24);
  ASSERT_EQ(out_.sent[kNodeA].size(), before_a + 1);  // one reply for the node's two ranks
  EXPECT_EQ(out_.last(kNodeA).id(), 21u);
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  EXPECT_EQ(out_.last(kNodeB).id(), 22u);
  EXPECT_EQ(out_.last(kRank4).id(), 24u);
  EXPECT_EQ(out_.last(kRank4).code(), proto::OK);
}

TEST_F(NodeBrokerTest, ADroppedNodesBarrierArrivalsAreUndone) {
  step();
  barrier(kNodeA, {0, 1}, 21);
  goodbye(kNodeA, std::nullopt);  // leaves cleanly: its ranks leave with it
  EXPECT_FALSE(broker_.aborted());
  EXPECT_TRUE(broker_.stats().report_json().find("\"nodes_connected\":1") != std::string::npos);
  barrier(kNodeB, {2, 3}, 22);
  barrier(kRank4, {}, 24);
  EXPECT_EQ(out_.last(kRank4).id(), 1u);  // its hello reply only: ranks 0 and 1 never arrive again
}

// Node A's agent doubted its link (an outage) and says hello again on a new
// connection: its ranks keep their places, the old connection's pending
// barrier arrival is undone (the agent sends it again) and no verdict falls.
TEST_F(NodeBrokerTest, ANodeThatReconnectsKeepsItsRanksAndItsOldConnectionGoesQuietly) {
  step();
  barrier(kNodeA, {0, 1}, 21);
  constexpr ConnId kNodeA2 = 20;
  ASSERT_EQ(node_hello(kNodeA2, {0, 1}, "na").code(), proto::OK);
  EXPECT_FALSE(broker_.knows(kNodeA));
  EXPECT_TRUE(std::find(out_.closed.begin(), out_.closed.end(), kNodeA) != out_.closed.end());
  EXPECT_EQ(broker_.liveness().slot(0).conn, kNodeA2);
  EXPECT_EQ(broker_.liveness().slot(1).conn, kNodeA2);
  EXPECT_EQ(broker_.relinks(), 1u);
  const proto::Stats s = broker_.stats();
  EXPECT_EQ(s.connections(), 3u);
  EXPECT_EQ(s.ranks_connected(), 5u);
  EXPECT_NE(s.text().find("nodes_connected 2\n"), std::string::npos) << s.text();
  broker_.on_disconnect(kNodeA, t0_);  // the old socket's end, seen late: no news
  barrier(kNodeA2, {0, 1}, 25);        // sent again: not "entered twice"
  barrier(kNodeB, {2, 3}, 22);
  barrier(kRank4, {}, 24);
  EXPECT_EQ(out_.last(kNodeA2).id(), 25u);
  EXPECT_EQ(out_.last(kNodeA2).code(), proto::OK);
  EXPECT_FALSE(broker_.aborted()) << failure();
  // The new connection's heartbeats keep the node heard.
  ticks(milliseconds(100), milliseconds(8'000), [&](Clock::time_point t) {
    node_heartbeat(kNodeA2, {0, 1}, t);
    node_heartbeat(kNodeB, {2, 3}, t);
    heartbeat(kRank4, t);
  });
  EXPECT_FALSE(broker_.aborted()) << failure();
}

TEST(NodeBrokerLimits, TheSilenceBoundIsTheSiteTablesHeartbeatTimeout) {
  EXPECT_EQ(BrokerLimits{}.heartbeat_timeout,
            std::chrono::seconds(site_defaults().heartbeat_timeout_s));
}

TEST_F(NodeBrokerTest, OnlyTheSameHostWithTheSameRanksTakesANodesPlace) {
  step();
  EXPECT_EQ(node_hello(20, {0, 1}, "elsewhere").code(), proto::CONFLICT);
  EXPECT_EQ(node_hello(21, {0}, "na").code(), proto::CONFLICT);
  EXPECT_EQ(node_hello(22, {0, 1, 2}, "na").code(), proto::CONFLICT);
  EXPECT_TRUE(broker_.knows(kNodeA));
  EXPECT_EQ(broker_.relinks(), 0u);
  EXPECT_FALSE(broker_.aborted());
}

TEST_F(NodeBrokerTest, ANodeBackAfterTheVerdictIsRefusedWithIt) {
  step();
  rank_lost(kNodeB, 2, 1, std::nullopt, "");
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(node_hello(20, {0, 1}, "na").code(), proto::ABORTED);
  EXPECT_TRUE(broker_.knows(kNodeA));
}

TEST_F(NodeBrokerTest, HeartbeatsHearOnlyTheListedRanks) {
  step();
  // Node A lists both ranks, node B only rank 2, rank 4 beats itself.
  ticks(milliseconds(100), milliseconds(2'900), [&](Clock::time_point t) {
    node_heartbeat(kNodeA, {0, 1}, t);
    node_heartbeat(kNodeB, {2}, t);
    heartbeat(kRank4, t);
  });
  EXPECT_FALSE(broker_.aborted());
  ticks(milliseconds(3'000), milliseconds(3'100), [&](Clock::time_point t) {
    node_heartbeat(kNodeA, {0, 1}, t);
    node_heartbeat(kNodeB, {2}, t);
    heartbeat(kRank4, t);
  });
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::silence);
  EXPECT_EQ(broker_.abort_cause()->rank, 3);
  EXPECT_EQ(broker_.abort_cause()->host, "nb");
  EXPECT_NE(failure().find("rank 3 (host nb, via its node agent) sent no heartbeat"),
            std::string::npos)
      << failure();
  EXPECT_NE(broker_.stats().report_json().find("\"ops_done\":7"), std::string::npos);
}

// Node B's agent (which vouches for its tasks, libdp or not) falls silent
// while node A and rank 4 are heard: the node is lost, named, and the step is
// ended through slurmctld (B's tasks are out of every agent's reach).
TEST_F(NodeBrokerTest, ANodeFallingSilentWhileOthersAreHeardIsTheNodesVerdict) {
  step();
  ticks(milliseconds(100), milliseconds(3'100), [&](Clock::time_point t) {
    node_heartbeat(kNodeA, {0, 1}, t);
    heartbeat(kRank4, t);
  });
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::node_silent);
  EXPECT_EQ(broker_.abort_cause()->host, "nb");
  EXPECT_NE(failure().find("the node agent on host nb (ranks 2-3) sent no heartbeat for 3000 ms "
                           "while other nodes were heard"),
            std::string::npos)
      << failure();
  EXPECT_NE(failure().find("verdict node_silent]"), std::string::npos) << failure();
  EXPECT_NE(broker_.stats().report_json().find("\"verdict\":\"node_silent\""), std::string::npos);
  EXPECT_EQ(out_.slurm_ends, (std::vector<AbortCause::How>{AbortCause::How::node_silent}));
  EXPECT_EQ(out_.last(kNodeA).code(), proto::ABORTED);
}

TEST_F(NodeBrokerTest, ATaskVerdictIsLeftToTheAgentsAndKeepEndsNothingInSlurm) {
  step();
  rank_lost(kNodeB, 3, std::nullopt, 9, "");
  ASSERT_TRUE(broker_.aborted());
  EXPECT_TRUE(out_.slurm_ends.empty());  // every node is reachable: its agent ends its tasks
  BrokerConfig keep = config(5);
  keep.limits.on_failure = OnFailure::keep;
  Broker& b = other_broker(keep, node_hello_req({0, 1}, "na"));
  b.on_disconnect(1, t0_);
  ASSERT_TRUE(b.aborted());
  EXPECT_EQ(b.abort_cause()->how, AbortCause::How::node_lost);
  EXPECT_TRUE(other_out_.slurm_ends.empty());
}

TEST_F(NodeBrokerTest, EveryRankSilentBehindNodesIsASuspension) {
  step();
  ticks(milliseconds(100), milliseconds(10'000));
  EXPECT_FALSE(broker_.aborted());
  EXPECT_TRUE(broker_.liveness().suspended());
  node_heartbeat(kNodeA, {0}, t0_ + milliseconds(10'050));
  EXPECT_FALSE(broker_.liveness().suspended());
}

TEST_F(NodeBrokerTest, ANodeDroppingBeforeItsGoodbyesAbortsNamingTheNode) {
  step();
  goodbye(kNodeB, 2);
  EXPECT_EQ(out_.last(kNodeB).code(), proto::OK);
  broker_.on_disconnect(kNodeB, t0_);
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::node_lost);
  EXPECT_EQ(broker_.abort_cause()->rank, 3);  // its first rank still running
  EXPECT_EQ(broker_.abort_cause()->host, "nb");
  EXPECT_NE(failure().find("the node agent on host nb (ranks 2-3) lost its connection"),
            std::string::npos)
      << failure();
  EXPECT_NE(failure().find("rank(s) 3 had not said goodbye"), std::string::npos) << failure();
  EXPECT_NE(failure().find("[node_lost, "), std::string::npos) << failure();
  EXPECT_EQ(out_.last(kRank4).code(), proto::ABORTED);  // the push reaches the others
  EXPECT_EQ(out_.slurm_ends, (std::vector<AbortCause::How>{AbortCause::How::node_lost}));
}

// scancel: a task ended by Slurm's SIGTERM is the user's doing, no failure.
TEST_F(NodeBrokerTest, ATaskEndedByTheUsersSignalIsNoFailure) {
  step();
  proto::Request l;
  l.set_id(40);
  l.mutable_rank_lost()->set_rank(2);
  l.mutable_rank_lost()->set_signal(SIGTERM);
  l.mutable_rank_lost()->set_user_signal(SIGTERM);
  frame(kNodeB, l, t0_);
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::user_signal);
  EXPECT_EQ(failure().rfind("cancelled by the user (SIGTERM", 0), 0u) << failure();
  EXPECT_EQ(failure().find("first failure"), std::string::npos) << failure();
  EXPECT_NE(failure().find("rank 2 (host nb) was killed by signal 15"), std::string::npos);
  EXPECT_NE(failure().find("verdict cancelled]"), std::string::npos) << failure();
  const proto::Stats s = broker_.stats();
  EXPECT_TRUE(s.ended_by_user());
  EXPECT_NE(s.report_json().find("\"how\":\"user_signal\",\"verdict\":\"cancelled\""),
            std::string::npos)
      << s.report_json();
  EXPECT_TRUE(out_.slurm_ends.empty());  // Slurm is ending the step already
}

// srun's second Ctrl-C: SIGINT reaches the nodes, then Slurm kills what is
// left, node agents included: the lost node is the user's doing.
TEST_F(NodeBrokerTest, ANodeLostAfterTheUsersInterruptIsNoFailure) {
  step();
  proto::Request sig;
  sig.mutable_step_signal()->set_signal(SIGINT);
  frame(kNodeA, sig, t0_);
  EXPECT_FALSE(broker_.aborted());
  frame(kRank4, sig, t0_);                     // only a node agent reports the step's signals
  frame(kNodeB, sig, t0_ + milliseconds(10));  // the same delivery, on the next node
  EXPECT_FALSE(broker_.aborted());
  broker_.on_disconnect(kNodeB, t0_ + milliseconds(40));
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::user_signal);
  EXPECT_EQ(failure().rfind("ended by the user (SIGINT: Ctrl-C twice at srun", 0), 0u) << failure();
  EXPECT_NE(failure().find("host nb ended with the step's tasks 40 ms after SIGINT from Slurm "
                           "reached host na"),
            std::string::npos)
      << failure();
  EXPECT_NE(failure().find("verdict interrupted]"), std::string::npos) << failure();
  EXPECT_TRUE(broker_.stats().ended_by_user());
  EXPECT_TRUE(out_.slurm_ends.empty());
}

// A notice (USR1) the tasks handle explains no lost node.
TEST_F(NodeBrokerTest, ANodeLostAfterANoticeIsStillLost) {
  step();
  proto::Request sig;
  sig.mutable_step_signal()->set_signal(SIGUSR1);
  frame(kNodeA, sig, t0_);
  broker_.on_disconnect(kNodeB, t0_ + milliseconds(40));
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::node_lost);
  EXPECT_FALSE(broker_.stats().ended_by_user());
}

TEST_F(NodeBrokerTest, RankLostCarriesTheExitCodeIntoTheFirstFailure) {
  step();
  rank_lost(kNodeA, 3, 1, std::nullopt, "");  // not its rank
  EXPECT_EQ(out_.last(kNodeA).code(), proto::INVALID_ARGUMENT);
  EXPECT_FALSE(broker_.aborted());
  rank_lost(kNodeA, 1, 3, std::nullopt, "");
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->how, AbortCause::How::rank_lost);
  EXPECT_EQ(broker_.abort_cause()->rank, 1);
  EXPECT_NE(failure().find("rank 1 (host na) exited with code 3"), std::string::npos) << failure();
  EXPECT_NE(failure().find("[rank_lost, exit code 3, "), std::string::npos) << failure();
  const std::string json = broker_.stats().report_json();
  EXPECT_NE(json.find("\"rank\":1,\"host\":\"na\",\"how\":\"rank_lost\",\"verdict\":\"task_exit\","
                      "\"exit_code\":3,"),
            std::string::npos)
      << json;
}

TEST_F(NodeBrokerTest, RankLostCarriesTheSignalOrTheLocalDrop) {
  step();
  rank_lost(kNodeB, 2, std::nullopt, 9, "");
  EXPECT_NE(failure().find("rank 2 (host nb) was killed by signal 9"), std::string::npos)
      << failure();
  EXPECT_NE(failure().find("[rank_lost, signal 9, "), std::string::npos) << failure();
  EXPECT_NE(broker_.stats().report_json().find("\"signal\":9"), std::string::npos);

  Broker& b = other_broker(config(5), node_hello_req({0, 1}, "na"));
  proto::Request l;
  l.set_id(2);
  l.mutable_rank_lost()->set_rank(0);
  l.mutable_rank_lost()->set_detail("local connection dropped");
  b.on_frame(1, l.SerializeAsString(), t0_);
  ASSERT_TRUE(b.report().failure());
  EXPECT_NE(b.report().failure()->message.find("rank 0 (host na) lost its local connection"
                                               " without saying goodbye (reported by its node "
                                               "agent: local connection dropped) [rank_lost, "),
            std::string::npos)
      << b.report().failure()->message;
}

TEST_F(NodeBrokerTest, ALaunchersFailedWorkerFollowsTheLaunchersRankAndHost) {
  step();
  proto::Request l;
  l.set_id(41);
  auto* m = l.mutable_rank_lost();
  m->set_rank(2);
  m->set_signal(9);
  m->set_worker_rank(3);
  frame(kNodeB, l, t0_);
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->worker_rank, 3);
  // The usual prefix first, so that tools matching it still match.
  EXPECT_EQ(failure().rfind("first failure: rank 2 (host nb) is failing: its worker rank 3 was "
                            "killed by signal 9 (reported by its node agent before the launcher "
                            "ended) [rank_lost, worker rank 3, signal 9, ",
                            0),
            0u)
      << failure();
  const std::string json = broker_.stats().report_json();
  EXPECT_NE(json.find("\"signal\":9,\"worker_rank\":3,"), std::string::npos) << json;
}

TEST_F(NodeBrokerTest, AnAbortFromANodeNamesTheLocalRank) {
  step();
  proto::Request a;
  a.set_id(50);
  a.mutable_abort()->set_reason("loss is NaN");
  a.mutable_abort()->set_rank(3);
  frame(kNodeB, a, t0_);
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(broker_.abort_cause()->rank, 3);
  EXPECT_EQ(broker_.abort_cause()->host, "nb");
  EXPECT_NE(failure().find("job aborted by rank 3 (host nb, via its node agent): loss is NaN"),
            std::string::npos)
      << failure();
}

TEST_F(NodeBrokerTest, GoodbyesPerRankThenTheNodeLeavesAndTheStepIsFinished) {
  step();
  goodbye(kNodeA, 0);
  goodbye(kNodeA, 0);  // twice: no longer its live rank
  EXPECT_EQ(out_.last(kNodeA).code(), proto::INVALID_ARGUMENT);
  goodbye(kNodeA, 1);
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  EXPECT_TRUE(broker_.knows(kNodeA));  // the node's connection stays
  EXPECT_EQ(broker_.stats().ranks_connected(), 3u);
  broker_.on_disconnect(kNodeA, t0_);  // every rank said goodbye: not a loss
  goodbye(kNodeB, std::nullopt);       // the node leaves with its ranks
  goodbye(kRank4, std::nullopt);
  EXPECT_FALSE(broker_.aborted());
  EXPECT_TRUE(broker_.finished());
  EXPECT_EQ(broker_.liveness().goodbye_count(), 5);
}

TEST_F(NodeBrokerTest, WriteOnceKeysRefuseChangesAndAreFlaggedForCaching) {
  step();
  proto::Request g;
  g.set_id(60);
  g.mutable_get()->set_key("id");
  g.mutable_get()->set_blocking(true);
  frame(kNodeB, g, t0_);  // waits for the key
  proto::Request s;
  s.set_id(61);
  s.mutable_set()->set_key("id");
  s.mutable_set()->set_value("X");
  s.mutable_set()->set_once(true);
  frame(kNodeA, s, t0_);
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  EXPECT_EQ(out_.last(kNodeB).value(), "X");
  EXPECT_TRUE(out_.last(kNodeB).flag());  // answered from the waiter: cacheable
  frame(kNodeA, s, t0_);                  // the same value again
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  s.mutable_set()->set_value("Y");
  s.mutable_set()->set_once(false);
  frame(kRank4, s, t0_);
  EXPECT_EQ(out_.last(kRank4).code(), proto::CONFLICT);
  proto::Request e;
  e.set_id(62);
  e.mutable_erase()->set_key("id");
  frame(kRank4, e, t0_);
  EXPECT_EQ(out_.last(kRank4).code(), proto::CONFLICT);
  frame(kRank4, g, t0_);
  EXPECT_EQ(out_.last(kRank4).value(), "X");
  EXPECT_TRUE(out_.last(kRank4).flag());
  s.mutable_set()->set_key("plain");
  frame(kRank4, s, t0_);
  g.mutable_get()->set_key("plain");
  frame(kRank4, g, t0_);
  EXPECT_EQ(out_.last(kRank4).value(), "Y");
  EXPECT_FALSE(out_.last(kRank4).flag());
}

TEST_F(NodeBrokerTest, TheMasterNodesFailureTravelsTypedWithEveryAbortedReply) {
  step();
  proto::Request get;
  get.set_id(60);
  get.mutable_get()->set_key(kStepPortsKey);
  get.mutable_get()->set_blocking(true);
  get.mutable_get()->set_timeout_ms(5000);
  frame(kNodeB, get, t0_);
  // Only the node holding rank 0 speaks for the master node.
  proto::Request abort;
  abort.set_id(61);
  abort.mutable_abort()->set_reason("the master node could not set up the step: node na: full");
  abort.mutable_abort()->mutable_master_failure()->set_node("na");
  abort.mutable_abort()->mutable_master_failure()->set_reason("full");
  frame(kNodeA, abort, t0_);
  ASSERT_TRUE(broker_.aborted());
  const proto::Response& waiting = out_.last(kNodeB);  // the pending get, failed
  EXPECT_EQ(waiting.code(), proto::ABORTED);
  EXPECT_EQ(waiting.master_failure().node(), "na");
  EXPECT_EQ(waiting.master_failure().reason(), "full");
  // A node whose hello comes after the abort is refused with it too.
  EXPECT_EQ(node_hello(9, {2, 3}, "nc").master_failure().node(), "na");
}

TEST_F(NodeBrokerTest, OnlyTheMasterNodeNamesAMasterFailure) {
  step();
  proto::Request abort;
  abort.set_id(61);
  abort.mutable_abort()->set_reason("not mine to say");
  abort.mutable_abort()->mutable_master_failure()->set_node("na");
  frame(kNodeB, abort, t0_);
  ASSERT_TRUE(broker_.aborted());
  EXPECT_FALSE(out_.last(kRank4).has_master_failure());  // the abort push
  EXPECT_EQ(out_.last(kRank4).code(), proto::ABORTED);
}

proto::Request publish(const StepPortsValue& v, uint64_t id = 70) {
  proto::Request r;
  r.set_id(id);
  rdv::to_proto(v, *r.mutable_publish_ports()->mutable_value());
  return r;
}

TEST_F(NodeBrokerTest, TheMasterNodesPortTimesTheMasterPortPhase) {
  step();
  proto::Request s;
  s.set_id(70);
  s.mutable_set()->set_key("plain");  // any other key of a node agent: no port
  s.mutable_set()->set_value("1");
  frame(kNodeB, s, t0_ + std::chrono::milliseconds(5));
  EXPECT_NE(broker_.startup_line().find("master_port none"), std::string::npos)
      << broker_.startup_line();
  frame(kNodeA, publish(StepPortsValue{29500}), t0_ + std::chrono::milliseconds(20));
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  EXPECT_NE(broker_.startup_line().find("master_port +20.0ms"), std::string::npos)
      << broker_.startup_line();
}

// --dp-ports: the master node's published value names the step's ports in
// dp-top's text and the report, and the other nodes fetch it; only the node
// holding rank 0 publishes, and a set of the key is no publish.
TEST_F(NodeBrokerTest, TheMasterNodesPublishedPortsAreTheStepsPorts) {
  step();
  StepPortsValue other{1234};
  other.dp_ports = {1235};
  frame(kNodeB, publish(other), t0_);
  EXPECT_EQ(out_.last(kNodeB).code(), proto::UNAUTHORIZED) << "not the master node";
  proto::Request s;
  s.set_id(71);
  s.mutable_set()->set_key("dp/any");
  s.mutable_set()->set_value(rdv::encode_step_ports(other));
  frame(kNodeA, s, t0_);
  EXPECT_NE(broker_.stats().text().find("ports -\n"), std::string::npos) << broker_.stats().text();
  StepPortsValue v{29500};
  v.dp_ports = {29501, 29502};
  frame(kNodeA, publish(v), t0_);
  EXPECT_EQ(out_.last(kNodeA).code(), proto::OK);
  EXPECT_NE(broker_.stats().text().find("ports 29500 (coordinator), DP_PORTS 29501,29502\n"),
            std::string::npos)
      << broker_.stats().text();
  const Json j = Json::parse(broker_.report_json(t0_));
  EXPECT_EQ(j["ports"]["coordinator"], 29500);
  EXPECT_EQ(j["ports"]["dp_ports"], Json::array({29501, 29502}));
  proto::Request get;
  get.set_id(72);
  get.mutable_get()->set_key(kStepPortsKey);
  frame(kNodeB, get, t0_);
  auto fetched = rdv::decode_step_ports(out_.last(kNodeB).value());
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_EQ(fetched->coordinator, 29500);
  EXPECT_EQ(fetched->dp_ports, (std::vector<int>{29501, 29502}));
}

}  // namespace
}  // namespace dp::daemon
