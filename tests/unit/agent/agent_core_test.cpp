// The agent's core fed by hand: local hellos, barrier folding, get
// coalescing and caching, losses and heartbeats, the daemon's end.
#include "agent_core.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <memory>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "signed_hello.hpp"
#include "stacks_ask.hpp"
#include "step_ports_value.hpp"

namespace dp::agent {
namespace {

const std::string kSecret = "0011223344556677";
std::string nonce() { return std::string(32, 'n'); }

struct Recorder : AgentOutbox {
  std::map<ConnId, std::vector<proto::Response>> to_ranks;
  std::vector<proto::Request> to_daemon_;
  std::vector<ConnId> closed;
  void to_rank(ConnId c, const proto::Response& r) override { to_ranks[c].push_back(r); }
  void close_rank(ConnId c) override { closed.push_back(c); }
  void to_daemon(const proto::Request& r) override { to_daemon_.push_back(r); }
  void end_tasks(const std::string& why, const std::set<int>& told_ranks) override {
    ended.push_back(why);
    told = told_ranks;
  }
  void relink(Clock::time_point deadline) override { relinks.push_back(deadline); }
  void read_stacks(uint64_t ask, std::chrono::milliseconds deadline, bool) override {
    stacks_asks.emplace_back(ask, deadline);
  }
  void sample_ranks(std::chrono::milliseconds every) override { sample_every.push_back(every); }
  void add_samples(proto::Heartbeat& hb) override {
    auto* s = hb.add_samples();
    s->set_rank(1);
    s->set_looks(++looks);
  }
  std::vector<std::chrono::milliseconds> sample_every;  // each SampleAsk
  uint64_t looks = 0;
  void restart(const proto::Restart& r) override { restarts.push_back(r); }
  void fence_programs(const std::string& why) override { fences.push_back(why); }
  std::vector<std::string> fences;         // each fence_programs, by its reason
  std::vector<proto::Restart> restarts;    // the daemon's restart orders, passed on
  std::vector<Clock::time_point> relinks;  // each reconnect asked for, by its deadline
  std::vector<std::pair<uint64_t, std::chrono::milliseconds>> stacks_asks;  // each read asked for
  std::vector<std::string> ended;  // each end_tasks verdict
  std::set<int> told;              // the last verdict's ranks told through libdp
  const proto::Response& last(ConnId c) { return to_ranks.at(c).back(); }
};

class AgentCoreTest : public ::testing::Test {
 protected:
  AgentCoreTest() : core(config(), out, now) {
    proto::Response challenge;
    challenge.set_challenge(nonce());
    core.on_daemon_response(challenge, now);
    proto::Response ok;
    ok.set_id(out.to_daemon_.at(0).id());
    core.on_daemon_response(ok, now);
  }
  static AgentConfig config() {
    AgentConfig c;
    c.secret = kSecret;
    c.host = "n1";
    c.world_size = 4;
    c.node_ranks = {1, 2};
    c.make_nonce = nonce;
    return c;
  }
  proto::Request hello(int rank, const std::string& secret = kSecret) {
    return dp::test::signed_hello(secret, nonce(), proto::ROLE_RANK, rank, 4, "n1");
  }
  void frame(ConnId c, const proto::Request& r) { frame(core, c, r); }
  void frame(AgentCore& k, ConnId c, const proto::Request& r) {
    k.on_rank_frame(c, r.SerializeAsString(), now);
  }
  void join(ConnId c, int rank) { join(core, out, c, rank); }
  void join(AgentCore& k, Recorder& rec, ConnId c, int rank) {
    k.on_rank_connect(c, now);
    frame(k, c, hello(rank));
    ASSERT_EQ(rec.last(c).code(), proto::OK);
  }
  // Another agent's link: the daemon's challenge, then `reply` to its hello.
  void hello_answered(AgentCore& c, proto::Response reply) {
    proto::Response challenge;
    challenge.set_challenge(nonce());
    c.on_daemon_response(challenge, now);
    reply.set_id(1);  // the hello's
    c.on_daemon_response(reply, now);
  }
  void answer(const proto::Request& up, proto::Response r) {
    r.set_id(up.id());
    core.on_daemon_response(r, now);
  }

  Clock::time_point now = Clock::time_point{} + std::chrono::hours(1);
  Recorder out;
  AgentCore core;
};

TEST_F(AgentCoreTest, TheNodeHelloCarriesItsRanksAndAProofOverThem) {
  const proto::Hello& h = out.to_daemon_.at(0).hello();
  EXPECT_EQ(h.role(), proto::ROLE_NODE);
  ASSERT_EQ(h.node_ranks_size(), 2);
  const std::vector<int32_t> ranks = {1, 2};
  EXPECT_EQ(h.proof(), rdv::hello_proof(kSecret, nonce(), proto::ROLE_NODE, -1, 4, "n1", ranks));
  EXPECT_TRUE(core.daemon_ready());
}

TEST_F(AgentCoreTest, OnlyThisNodesRanksWithTheSecretGetIn) {
  core.on_rank_connect(10, now);
  frame(10, hello(1, "another-secret"));
  EXPECT_EQ(out.last(10).code(), proto::UNAUTHORIZED);
  core.on_rank_connect(11, now);
  frame(11, hello(3));  // rank 3 lives on another node
  EXPECT_EQ(out.last(11).code(), proto::UNAUTHORIZED);
  join(12, 1);
  core.on_rank_connect(13, now);
  frame(13, hello(1));
  EXPECT_EQ(out.last(13).code(), proto::CONFLICT);
  EXPECT_EQ(out.closed, (std::vector<ConnId>{10, 11, 13}));
}

TEST_F(AgentCoreTest, NoRandomBytesRefusesARankNamingTheCause) {
  AgentConfig c = config();
  c.make_nonce = []() -> Result<std::string> {
    return make_error(Errc::unavailable, "cannot read random bytes from the kernel: getrandom: x");
  };
  Recorder rec;
  AgentCore other(c, rec, now);
  other.on_rank_connect(5, now);
  ASSERT_EQ(rec.to_ranks.at(5).size(), 1u);
  EXPECT_TRUE(rec.last(5).challenge().empty());
  EXPECT_EQ(rec.last(5).code(), proto::UNAVAILABLE);
  EXPECT_NE(rec.last(5).message().find("node agent on n1: cannot read random bytes"),
            std::string::npos)
      << rec.last(5).message();
  EXPECT_EQ(rec.closed, (std::vector<ConnId>{5}));
}

// A rank's over-limit request is refused under its id and the rank stays
// (its connection dropping would end the step); before hello, it is closed.
TEST_F(AgentCoreTest, AnOverLimitRequestIsRefusedAndTheRankStays) {
  join(1, 1);
  proto::Request big;
  big.set_id(42);
  big.mutable_set()->set_key("k");
  big.mutable_set()->set_value(std::string(64, 'v'));
  const std::string head = big.SerializeAsString().substr(0, 16);
  EXPECT_TRUE(core.on_rank_oversized(1, 1u << 30, head));
  EXPECT_EQ(out.last(1).id(), 42u);
  EXPECT_EQ(out.last(1).code(), proto::LIMIT);
  EXPECT_NE(out.last(1).message().find("the connection stays"), std::string::npos);
  EXPECT_TRUE(core.knows(1));
  EXPECT_TRUE(out.closed.empty());
  core.on_rank_connect(5, now);
  EXPECT_FALSE(core.on_rank_oversized(5, 1u << 30, {}));
  EXPECT_EQ(out.closed, (std::vector<ConnId>{5}));
}

TEST_F(AgentCoreTest, BarrierArrivalsFoldIntoOneUpstream) {
  join(1, 1);
  join(2, 2);
  const size_t before = out.to_daemon_.size();
  proto::Request b;
  b.set_id(7);
  b.mutable_barrier()->set_name("start");
  b.mutable_barrier()->set_timeout_ms(5000);
  frame(1, b);
  EXPECT_EQ(out.to_daemon_.size(), before);  // rank 2 has not arrived
  b.set_id(9);
  frame(2, b);
  ASSERT_EQ(out.to_daemon_.size(), before + 1);
  const proto::Request up = out.to_daemon_.back();
  EXPECT_EQ(up.barrier().ranks_size(), 2);
  answer(up, proto::Response());
  EXPECT_EQ(out.last(1).id(), 7u);
  EXPECT_EQ(out.last(2).id(), 9u);
  EXPECT_EQ(out.last(2).code(), proto::OK);
}

TEST_F(AgentCoreTest, ALocalBarrierTimeoutNamesTheMissingLocalRank) {
  join(1, 1);
  proto::Request b;
  b.set_id(7);
  b.mutable_barrier()->set_name("start");
  b.mutable_barrier()->set_timeout_ms(100);
  frame(1, b);
  now += std::chrono::milliseconds(150);
  core.on_tick(now);
  EXPECT_EQ(out.last(1).code(), proto::TIMEOUT);
  EXPECT_NE(out.last(1).message().find("not arrived: 2"), std::string::npos)
      << out.last(1).message();
}

TEST_F(AgentCoreTest, IdenticalGetsGoUpstreamOnceAndWriteOnceKeysAreCached) {
  join(1, 1);
  join(2, 2);
  const size_t before = out.to_daemon_.size();
  proto::Request g;
  g.set_id(5);
  g.mutable_get()->set_key("nccl/id");
  g.mutable_get()->set_blocking(true);
  g.mutable_get()->set_timeout_ms(5000);
  frame(1, g);
  frame(2, g);
  ASSERT_EQ(out.to_daemon_.size(), before + 1);
  proto::Response r;
  r.set_value("the-id");
  r.set_flag(true);
  answer(out.to_daemon_.back(), r);
  EXPECT_EQ(out.last(1).value(), "the-id");
  EXPECT_EQ(out.last(2).value(), "the-id");
  g.set_id(6);
  frame(2, g);  // a second dp::init asks again: the cache answers
  EXPECT_EQ(out.to_daemon_.size(), before + 1);
  EXPECT_EQ(out.last(2).id(), 6u);
  EXPECT_EQ(out.last(2).value(), "the-id");
  EXPECT_EQ(core.cached_keys(), 1u);
}

TEST_F(AgentCoreTest, ADroppedRankIsLostWithHowItEnded) {
  join(1, 1);
  core.on_rank_disconnect(1, now);
  core.on_task_exit(1, 9, now);  // killed by SIGKILL: wait status 9
  const proto::Request& up = out.to_daemon_.back();
  ASSERT_TRUE(up.has_rank_lost());
  EXPECT_EQ(up.rank_lost().rank(), 1);
  EXPECT_EQ(up.rank_lost().signal(), 9);
  EXPECT_FALSE(up.rank_lost().has_exit_code());
}

TEST_F(AgentCoreTest, ALaunchersFailedWorkerIsItsLossNamedWithTheWorkersRank) {
  const size_t before = out.to_daemon_.size();
  core.on_worker_exit(1, 5, 0, now);  // a worker that exited 0: no failure
  EXPECT_EQ(out.to_daemon_.size(), before);
  core.on_worker_exit(1, 3, 9, now);  // worker rank 3 killed by SIGKILL
  const proto::Request up = out.to_daemon_.back();
  ASSERT_TRUE(up.has_rank_lost());
  EXPECT_EQ(up.rank_lost().rank(), 1);
  EXPECT_EQ(up.rank_lost().worker_rank(), 3);
  EXPECT_EQ(up.rank_lost().signal(), 9);
  // The workers it ends next, and then the launcher's own exit, add nothing.
  core.on_worker_exit(1, 2, 15 << 8, now);
  core.on_task_exit(1, 1 << 8, now);
  EXPECT_EQ(out.to_daemon_.size(), before + 1);
}

// scancel --signal=USR1: the daemon hears of it at once; a task that dies of
// it ended by the user's signal, one that crashes later did not.
TEST_F(AgentCoreTest, ATaskEndingByTheUsersSignalIsReportedAsTheUsers) {
  core.on_step_signal(SIGUSR1, now);
  ASSERT_TRUE(out.to_daemon_.back().has_step_signal());
  EXPECT_EQ(out.to_daemon_.back().step_signal().signal(), SIGUSR1);
  EXPECT_EQ(out.to_daemon_.back().id(), 0u);  // no reply
  now += std::chrono::milliseconds(50);
  core.on_task_exit(1, SIGUSR1, now);
  ASSERT_TRUE(out.to_daemon_.back().has_rank_lost());
  EXPECT_EQ(out.to_daemon_.back().rank_lost().user_signal(), SIGUSR1);
  core.on_task_exit(2, SIGSEGV, now);
  ASSERT_TRUE(out.to_daemon_.back().has_rank_lost());
  EXPECT_FALSE(out.to_daemon_.back().rank_lost().has_user_signal());
}

// scancel: a launcher's worker that exits 1 after SIGTERM ended by the cancel.
TEST_F(AgentCoreTest, AWorkerEndingSoonAfterACancelIsTheCancels) {
  core.on_worker_exit(1, 3, 1 << 8, now);
  EXPECT_FALSE(out.to_daemon_.back().rank_lost().has_user_signal());  // no signal yet: a failure
  core.on_step_signal(SIGTERM, now);
  now += std::chrono::seconds(4);
  core.on_task_exit(2, 1 << 8, now);
  ASSERT_TRUE(out.to_daemon_.back().has_rank_lost());
  EXPECT_EQ(out.to_daemon_.back().rank_lost().user_signal(), SIGTERM);
}

TEST_F(AgentCoreTest, WithoutAnExitStatusTheLossIsReportedAfterTheGrace) {
  join(2, 2);
  core.on_rank_disconnect(2, now);
  now += std::chrono::milliseconds(300);
  core.on_tick(now);
  const proto::Request& up = out.to_daemon_.back();
  ASSERT_TRUE(up.has_rank_lost());
  EXPECT_EQ(up.rank_lost().rank(), 2);
}

TEST_F(AgentCoreTest, AGoodbyeIsNoLossAndOneHeartbeatSpeaksForTheNode) {
  join(1, 1);
  join(2, 2);
  proto::Request hb;
  hb.mutable_heartbeat()->mutable_progress()->set_ops_done(3);
  frame(1, hb);
  frame(2, hb);
  now += std::chrono::milliseconds(1'000);
  core.on_tick(now);
  const proto::Request& beat = out.to_daemon_.back();
  ASSERT_TRUE(beat.has_heartbeat());
  ASSERT_EQ(beat.heartbeat().ranks_size(), 2);
  EXPECT_EQ(beat.heartbeat().ranks(0).progress().ops_done(), 3u);
  EXPECT_EQ(beat.heartbeat().store_strangers(), 0u);
  EXPECT_EQ(core.note_store_stranger(), 1u);  // another user's client of the node's store
  now += std::chrono::milliseconds(1'000);
  core.on_tick(now);
  EXPECT_EQ(out.to_daemon_.back().heartbeat().store_strangers(), 1u);
  proto::Request bye;
  bye.set_id(4);
  bye.mutable_goodbye();
  frame(1, bye);
  EXPECT_EQ(out.to_daemon_.back().goodbye().rank(), 1);
  core.on_rank_disconnect(1, now);
  core.on_task_exit(1, 0, now);
  EXPECT_FALSE(out.to_daemon_.back().has_rank_lost());
}

TEST_F(AgentCoreTest, LosingTheDaemonAbortsTheLocalRanksNamingIt) {
  join(1, 1);
  core.on_daemon_lost("the connection closed");
  EXPECT_EQ(out.last(1).code(), proto::ABORTED);
  EXPECT_NE(out.last(1).message().find("the step's daemon"), std::string::npos);
  EXPECT_TRUE(core.finished());
}

TEST_F(AgentCoreTest, TheDaemonsAbortReachesEveryLocalRank) {
  join(1, 1);
  join(2, 2);
  proto::Response abort;
  abort.set_code(proto::ABORTED);
  abort.set_message("rank 0 (host n0) lost its connection");
  core.on_daemon_response(abort, now);
  EXPECT_EQ(out.last(1).message(), abort.message());
  EXPECT_EQ(out.last(2).code(), proto::ABORTED);
}

proto::Response abort_push() {
  proto::Response abort;
  abort.set_code(proto::ABORTED);
  abort.set_message("first failure: rank 3 (host n2) was killed by signal 9");
  return abort;
}

// The survivors are read for the report first (one read, rdv::kStacksAtFailure),
// and ended once its answer went to the daemon.
TEST_F(AgentCoreTest, TheDaemonsAbortEndsTheNodesTasksOnceTheirStacksWent) {
  EXPECT_TRUE(out.ended.empty());
  join(1, 2);  // a libdp rank: the abort is its polite signal
  const proto::Response abort = abort_push();
  core.on_daemon_response(abort, now);
  core.on_daemon_response(abort, now);  // a second push is the same verdict
  ASSERT_EQ(out.stacks_asks.size(), 1u);
  EXPECT_EQ(out.stacks_asks[0].first, rdv::kStacksAtFailure);
  EXPECT_LE(out.stacks_asks[0].second, AgentCore::kAtFailureWait);
  EXPECT_TRUE(out.ended.empty());
  core.stacks_sent(7);  // a dp-top round's answer is not the failure's
  EXPECT_TRUE(out.ended.empty());
  core.stacks_sent(rdv::kStacksAtFailure);
  core.stacks_sent(rdv::kStacksAtFailure);
  core.on_daemon_lost("the connection closed");
  EXPECT_EQ(out.ended, (std::vector<std::string>{abort.message()}));
  EXPECT_EQ(out.told, (std::set<int>{2}));
}

// The read adds at most kAtFailureWait to the end, from the first tick after the abort.
TEST_F(AgentCoreTest, AReadThatNeverComesBackEndsTheTasksAtTheBound) {
  core.on_daemon_response(abort_push(), now);
  core.on_tick(now);
  now += AgentCore::kAtFailureWait - std::chrono::milliseconds(1);
  core.on_tick(now);
  EXPECT_TRUE(out.ended.empty());
  now += std::chrono::milliseconds(1);
  core.on_tick(now);
  EXPECT_EQ(out.ended.size(), 1u);
  core.stacks_sent(rdv::kStacksAtFailure);  // late: nothing more to end
  EXPECT_EQ(out.ended.size(), 1u);
}

// A daemon lost during the read: the tasks end at once, with the abort's verdict.
TEST_F(AgentCoreTest, LosingTheDaemonDuringTheReadEndsTheTasksWithTheAbortsVerdict) {
  const proto::Response abort = abort_push();
  core.on_daemon_response(abort, now);
  core.on_daemon_lost("the connection closed");
  EXPECT_EQ(out.ended, (std::vector<std::string>{abort.message()}));
}

// A hang's verdict carries the stacks it was named by: no second read.
TEST_F(AgentCoreTest, AHangsVerdictEndsTheTasksWithoutAnotherRead) {
  proto::Response abort = abort_push();
  abort.mutable_hang()->set_rank(3);
  core.on_daemon_response(abort, now);
  EXPECT_TRUE(out.stacks_asks.empty());
  EXPECT_EQ(out.ended.size(), 1u);
}

TEST_F(AgentCoreTest, LosingTheDaemonEndsTheNodesTasksNamingIt) {
  core.on_daemon_lost("the connection closed");
  ASSERT_EQ(out.ended.size(), 1u);
  EXPECT_NE(out.ended[0].find("lost the step's daemon"), std::string::npos) << out.ended[0];
}

TEST_F(AgentCoreTest, KeepSurvivorsEndsNoTaskButStillRelaysTheAbort) {
  AgentConfig c = config();
  c.on_failure = OnFailure::keep;
  Recorder rec;
  AgentCore keep(c, rec, now);
  proto::Response abort;
  abort.set_code(proto::ABORTED);
  abort.set_message("first failure: rank 3 (host n2) was killed by signal 9");
  keep.on_daemon_response(abort, now);
  keep.on_daemon_lost("the connection closed");
  EXPECT_TRUE(rec.ended.empty());
}

// The straggler watch: the daemon's SampleAsk starts the I/O layer's looks,
// and every heartbeat carries its counts so far.
TEST_F(AgentCoreTest, TheDaemonsSampleAskStartsTheLooksEveryHeartbeatCarries) {
  proto::Response ask;  // id 0: a push
  ask.mutable_sample_ask()->set_every_ms(100);
  core.on_daemon_response(ask, now);
  ASSERT_EQ(out.sample_every.size(), 1u);
  EXPECT_EQ(out.sample_every[0], std::chrono::milliseconds(100));
  for (uint64_t beat = 1; beat <= 2; ++beat) {
    now += std::chrono::milliseconds(1'000);
    core.on_tick(now);
    const proto::Request& hb = out.to_daemon_.back();
    ASSERT_TRUE(hb.has_heartbeat());
    ASSERT_EQ(hb.heartbeat().samples_size(), 1);
    EXPECT_EQ(hb.heartbeat().samples(0).looks(), beat);
  }
}

// Tasks that never talk to slurm-dp are still running as far as the agent
// knows: its heartbeat names them, so a node falls silent only when it does.
TEST_F(AgentCoreTest, TheHeartbeatVouchesForRunningTasksThatNeverConnect) {
  now += std::chrono::milliseconds(1'000);
  core.on_tick(now);
  const proto::Request& beat = out.to_daemon_.back();
  ASSERT_TRUE(beat.has_heartbeat());
  ASSERT_EQ(beat.heartbeat().ranks_size(), 2);
  EXPECT_EQ(beat.heartbeat().ranks(0).rank(), 1);
  EXPECT_FALSE(beat.heartbeat().ranks(0).has_progress());
  core.on_task_exit(2, 0, now);  // ended: no longer vouched for
  join(1, 1);                    // connected: heard only when it speaks
  now += std::chrono::milliseconds(1'000);
  core.on_tick(now);
  const proto::Request& next = out.to_daemon_.back();
  ASSERT_TRUE(next.has_heartbeat());
  ASSERT_EQ(next.heartbeat().ranks_size(), 1);      // rank 1's hello counted as heard
  core.on_daemon_response(proto::Response(), now);  // the daemon's ping: the link is not in doubt
  now += std::chrono::milliseconds(1'000);
  core.on_tick(now);
  EXPECT_EQ(out.to_daemon_.back().heartbeat().ranks_size(), 0);
}

TEST_F(AgentCoreTest, TheMasterNodesFailureIsPublishedThenAbortsTheStep) {
  const size_t before = out.to_daemon_.size();
  core.publish_step_ports(MasterFailure{"n1", "no free MASTER_PORT"});
  ASSERT_EQ(out.to_daemon_.size(), before + 2);
  const proto::Request& publish = out.to_daemon_[before];
  ASSERT_TRUE(publish.has_publish_ports()) << "the ports are published, not set under a key";
  auto value = rdv::from_proto(publish.publish_ports().value());
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->failure.value().reason, "no free MASTER_PORT");
  const proto::Request& abort = out.to_daemon_[before + 1];
  ASSERT_TRUE(abort.has_abort());
  EXPECT_FALSE(abort.abort().has_rank());  // the node's own cause, no rank's
  EXPECT_EQ(abort.abort().master_failure().node(), "n1");
  EXPECT_EQ(abort.abort().reason(),
            "the master node could not set up the step: node n1: no free MASTER_PORT");
  answer(publish, proto::Response{});
  ASSERT_TRUE(core.step_ports() && *core.step_ports());
  EXPECT_TRUE((*core.step_ports())->failure);
}

TEST_F(AgentCoreTest, AFetchedPortIsTyped) {
  core.fetch_step_ports(std::chrono::seconds(5));
  const proto::Request get = out.to_daemon_.back();
  EXPECT_EQ(get.get().key(), kStepPortsKey);
  proto::Response r;
  r.set_value(rdv::encode_step_ports(29512));
  answer(get, r);
  ASSERT_TRUE(core.step_ports() && *core.step_ports());
  EXPECT_EQ((*core.step_ports())->coordinator, 29512);
}

TEST_F(AgentCoreTest, TheDaemonsAbortCarriesTheMasterNodesFailure) {
  core.fetch_step_ports(std::chrono::seconds(5));
  proto::Response aborted;
  aborted.set_code(proto::ABORTED);
  aborted.set_message("job aborted by node n0 (ranks 0): whatever the words");
  rdv::to_proto(MasterFailure{"n0", "no free MASTER_PORT"}, *aborted.mutable_master_failure());
  answer(out.to_daemon_.back(), aborted);
  ASSERT_TRUE(core.step_ports() && *core.step_ports());
  const auto& f = (*core.step_ports())->failure.value();
  EXPECT_EQ(f.node, "n0");
  EXPECT_EQ(f.reason, "no free MASTER_PORT");
  // Any other abort is an error of the exchange.
  AgentCore other(config(), out, now);
  other.fetch_step_ports(std::chrono::seconds(5));
  proto::Response refused;
  refused.set_code(proto::ABORTED);
  refused.set_message("rank 3 lost");
  hello_answered(other, refused);
  ASSERT_TRUE(other.step_ports());
  EXPECT_FALSE(*other.step_ports());
}

TEST_F(AgentCoreTest, ANodeRefusedAsLateStillLearnsTheMasterNodesFailure) {
  AgentCore late(config(), out, now);
  late.fetch_step_ports(std::chrono::seconds(5));
  proto::Response refused;
  refused.set_code(proto::ABORTED);
  refused.set_message("job aborted by node n0 (ranks 0): ...");
  rdv::to_proto(MasterFailure{"n0", "no free MASTER_PORT"}, *refused.mutable_master_failure());
  hello_answered(late, refused);
  EXPECT_TRUE(late.finished());
  ASSERT_TRUE(late.step_ports() && *late.step_ports());
  EXPECT_EQ((*late.step_ports())->failure.value().node, "n0");
}

// A step that restarts in place (--dp-spares): the daemon's orders reach the
// keepers (the I/O layer), the node answers each, a program stopped on the
// daemon's word is no loss, and START gives the node its new ranks afresh.
proto::Response restart_push(proto::Restart::Phase phase, int node_rank,
                             std::vector<int32_t> ranks) {
  proto::Response push;
  auto* r = push.mutable_restart();
  r->set_phase(phase);
  r->set_generation(1);
  r->set_node_rank(node_rank);
  for (int32_t x : ranks) r->add_node_ranks(x);
  r->set_restart_count(1);
  return push;
}

// ---- an outage of the daemon's link (the site's heartbeat_timeout bounds it) ----

class AgentRelinkTest : public AgentCoreTest {
 protected:
  static constexpr auto kBound = std::chrono::seconds(30);
  AgentRelinkTest() : link(relink_config(), rec, now) { hello_answered(link, proto::Response()); }
  static AgentConfig relink_config() {
    AgentConfig c = config();
    c.daemon_silence = kBound;
    return c;
  }
  void tick_until(Clock::time_point t) { tick_until(link, t); }
  // Another node's core, its link up, with settings of its own.
  std::unique_ptr<AgentCore> linked(const AgentConfig& c, Recorder& r) {
    auto core = std::make_unique<AgentCore>(c, r, now);
    hello_answered(*core, proto::Response());
    return core;
  }
  // Another core's ticks, every 100 ms as the agent's loop runs.
  void tick_until(AgentCore& c, Clock::time_point t) {
    while (now < t) {
      now += std::chrono::milliseconds(100);
      c.on_tick(now);
    }
  }
  proto::Request request(uint64_t id) {
    proto::Request r;
    r.set_id(id);
    return r;
  }
  Recorder rec;
  AgentCore link;
};

TEST_F(AgentRelinkTest, SilencePutsTheLinkInDoubtAndANewOneKeepsTheRanksAndTheirCalls) {
  ASSERT_TRUE(link.daemon_ready());
  join(link, rec, 1, 1);
  proto::Request get = request(5);
  get.mutable_get()->set_key("nccl/id");
  get.mutable_get()->set_blocking(true);
  frame(link, 1, get);
  proto::Request add = request(6);
  add.mutable_add()->set_key("count");
  add.mutable_add()->set_delta(1);
  frame(link, 1, add);
  const proto::Request get_up = rec.to_daemon_.at(rec.to_daemon_.size() - 2);
  ASSERT_TRUE(get_up.has_get());
  const auto heard = now;
  tick_until(heard + std::chrono::milliseconds(2'900));
  EXPECT_TRUE(rec.relinks.empty()) << "the daemon pings every second: 3 s of silence first";
  tick_until(heard + std::chrono::seconds(3));
  ASSERT_EQ(rec.relinks.size(), 1u);
  EXPECT_EQ(rec.relinks[0], heard + kBound);  // the bound counts from the last frame heard
  EXPECT_TRUE(link.relinking());
  EXPECT_FALSE(link.finished());
  EXPECT_TRUE(rec.ended.empty());
  // Asked while the link is in doubt: held until the new one is up.
  proto::Request set = request(7);
  set.mutable_set()->set_key("k");
  set.mutable_set()->set_value("v");
  frame(link, 1, set);
  const size_t before = rec.to_daemon_.size();
  EXPECT_FALSE(rec.to_daemon_.back().has_set());
  tick_until(heard + std::chrono::seconds(12));  // a 10 s outage
  link.relinked(proto::Response(), now);
  ASSERT_TRUE(link.daemon_ready());
  EXPECT_EQ(link.relinks(), 1);
  // The get again under its own id, then the held set; the add only maybe applied.
  ASSERT_EQ(rec.to_daemon_.size(), before + 2);
  EXPECT_EQ(rec.to_daemon_[before].id(), get_up.id());
  EXPECT_TRUE(rec.to_daemon_[before].has_get());
  EXPECT_TRUE(rec.to_daemon_[before + 1].has_set());
  EXPECT_EQ(rec.last(1).id(), 6u);
  EXPECT_EQ(rec.last(1).code(), proto::CONNECTION);
  EXPECT_NE(rec.last(1).message().find("whether it was applied is unknown"), std::string::npos);
  EXPECT_TRUE(rec.ended.empty());
  // The node's heartbeat goes out on the new link.
  tick_until(now + std::chrono::milliseconds(1'500));
  EXPECT_TRUE(rec.to_daemon_.back().has_heartbeat());
  EXPECT_EQ(rec.relinks.size(), 1u);
}

// The step's store says per request whether it may go again (its opcode
// table's resend): a GET does, a QUEUE_POP is answered "unknown".
TEST_F(AgentRelinkTest, ASinksRequestGoesAgainOnlyWhenItSaysItMay) {
  struct Sink : UpstreamSink {
    std::vector<proto::Response> answers;
    void on_upstream(uint64_t, const proto::Response& r) override { answers.push_back(r); }
  } sink;
  proto::Request get;
  get.mutable_get()->set_key("k");
  proto::Request pop;
  pop.mutable_queue_pop()->set_key("q");
  const uint64_t get_id = link.send_for(sink, get, true);
  const uint64_t pop_id = link.send_for(sink, pop, false);
  link.on_daemon_doubt("Connection timed out", now);
  const size_t before = rec.to_daemon_.size();
  link.relinked(proto::Response(), now);
  ASSERT_EQ(rec.to_daemon_.size(), before + 1);
  EXPECT_EQ(rec.to_daemon_[before].id(), get_id);
  EXPECT_TRUE(rec.to_daemon_[before].has_get());
  ASSERT_EQ(sink.answers.size(), 1u);
  EXPECT_EQ(sink.answers[0].id(), pop_id);
  EXPECT_EQ(sink.answers[0].code(), proto::CONNECTION);
}

TEST_F(AgentRelinkTest, ASocketTimeoutIsDoubtAndAnEndOrResetIsNot) {
  link.on_daemon_doubt("Connection timed out", now);
  ASSERT_EQ(rec.relinks.size(), 1u);
  link.on_daemon_doubt("again", now);  // one reconnect at a time
  EXPECT_EQ(rec.relinks.size(), 1u);
  Recorder other_out;
  AgentCore other(relink_config(), other_out, now);
  hello_answered(other, proto::Response());
  other.on_daemon_lost("the connection closed (srun ended or died)");
  EXPECT_TRUE(other_out.relinks.empty());
  EXPECT_TRUE(other.finished());
  ASSERT_EQ(other_out.ended.size(), 1u);
}

TEST_F(AgentRelinkTest, NoNewLinkWithinTheBoundEndsTheNodeNamingTheSilence) {
  const auto heard = now;
  tick_until(heard + std::chrono::seconds(3));
  ASSERT_TRUE(link.relinking());
  tick_until(heard + kBound - std::chrono::milliseconds(100));
  EXPECT_FALSE(link.finished());
  tick_until(heard + kBound);
  ASSERT_TRUE(link.finished());
  ASSERT_EQ(rec.ended.size(), 1u);
  EXPECT_NE(rec.ended[0].find("sent nothing for 30000 ms"), std::string::npos) << rec.ended[0];
  EXPECT_NE(rec.ended[0].find("heartbeat_timeout"), std::string::npos) << rec.ended[0];
  // The reconnect's own failure, arriving late, changes nothing.
  link.relink_failed("connect: timed out", now);
  EXPECT_EQ(rec.ended.size(), 1u);
}

TEST_F(AgentRelinkTest, AStepThatFailedMeanwhileEndsTheNodeWithItsVerdict) {
  link.on_daemon_doubt("Connection timed out", now);
  proto::Response refused;
  refused.set_id(1);
  refused.set_code(proto::ABORTED);
  refused.set_message("first failure: rank 3 (host n2) was killed by signal 9");
  link.relinked(refused, now);
  EXPECT_TRUE(link.finished());
  EXPECT_EQ(rec.ended, (std::vector<std::string>{refused.message()}));
}

// A step with spares: the agent gives up its node's place sooner than the
// heartbeat bound (the daemon replaces a node silent for spare_timeout, and
// starts its spare once fence_after has passed): its programs die first,
// whole trees, and the node's part ends; a 10 s stall fences nothing.
TEST_F(AgentRelinkTest, WithSparesSilenceFencesTheNodesProgramsAtTheFenceBound) {
  AgentConfig c = relink_config();
  c.fence_after = std::chrono::seconds(15);
  Recorder fo;
  auto spared = linked(c, fo);
  tick_until(*spared, now + std::chrono::seconds(10));
  spared->relinked(proto::Response(), now);  // the stall ends: nothing fenced
  EXPECT_TRUE(fo.fences.empty());
  tick_until(*spared, now + std::chrono::milliseconds(14'900));
  EXPECT_TRUE(fo.fences.empty());
  tick_until(*spared, now + std::chrono::milliseconds(100));
  ASSERT_EQ(fo.fences.size(), 1u);
  EXPECT_NE(fo.fences[0].find("fence_after"), std::string::npos) << fo.fences[0];
  EXPECT_TRUE(spared->finished());
  EXPECT_EQ(fo.ended.size(), 1u);
  spared->on_daemon_lost("late");
  EXPECT_EQ(fo.fences.size(), 1u);  // once
}

TEST_F(AgentRelinkTest, TheDaemonsFenceKillsTheProgramsAndIsAnsweredOnceTheyAreDead) {
  join(link, rec, 1, 1);
  proto::Response fence = restart_push(proto::Restart::FENCE, -1, {});
  fence.mutable_restart()->set_generation(4);
  link.on_daemon_response(fence, now);
  ASSERT_EQ(rec.fences.size(), 1u);
  EXPECT_TRUE(rec.restarts.empty());  // no STOP or START: the keepers hear "fence"
  EXPECT_TRUE(link.restarting());     // the programs' ends are the fence's doing
  const size_t sent = rec.to_daemon_.size();
  link.on_task_exit(1, SIGKILL, now);
  EXPECT_EQ(rec.to_daemon_.size(), sent);
  link.fenced();
  ASSERT_TRUE(rec.to_daemon_.back().has_restart_ready());
  EXPECT_EQ(rec.to_daemon_.back().restart_ready().phase(), proto::Restart::FENCE);
  EXPECT_EQ(rec.to_daemon_.back().restart_ready().generation(), 4u);
  // A START for a fenced node (it cannot come) changes nothing.
  link.on_daemon_response(restart_push(proto::Restart::START, 0, {0, 1}), now);
  EXPECT_TRUE(rec.restarts.empty());
}

// Without spares (no fence bound) a lost daemon fences nothing: the tasks
// end as before, through SIGTERM and the site's grace.
TEST_F(AgentRelinkTest, WithoutSparesALostDaemonFencesNothing) {
  link.on_daemon_lost("the connection closed (srun ended or died)");
  EXPECT_TRUE(rec.fences.empty());
  EXPECT_EQ(rec.ended.size(), 1u);
}

TEST_F(AgentRelinkTest, TheDoubtComesAtHalfAShortBound) {
  AgentConfig c = relink_config();
  c.daemon_silence = std::chrono::seconds(4);
  Recorder short_out;
  auto core = linked(c, short_out);
  AgentCore& short_bound = *core;
  const auto heard = now;
  while (now < heard + std::chrono::seconds(2)) {
    EXPECT_TRUE(short_out.relinks.empty());
    now += std::chrono::milliseconds(100);
    short_bound.on_tick(now);
  }
  EXPECT_EQ(short_out.relinks.size(), 1u);
}

TEST_F(AgentCoreTest, ARestartStopsTheProgramsQuietlyAndStartsThemWithTheNewRanks) {
  join(10, 1);
  core.on_daemon_response(restart_push(proto::Restart::STOP, -1, {}), now);
  ASSERT_EQ(out.restarts.size(), 1u);
  EXPECT_EQ(out.restarts[0].phase(), proto::Restart::STOP);
  EXPECT_TRUE(core.restarting());
  EXPECT_EQ(out.closed, std::vector<ConnId>{10});  // the old program's connection goes
  const size_t sent = out.to_daemon_.size();
  core.on_task_exit(1, SIGTERM, now);  // stopped on the daemon's word: no RankLost
  EXPECT_EQ(out.to_daemon_.size(), sent);
  core.restart_ready(1, proto::Restart::STOP);
  ASSERT_TRUE(out.to_daemon_.back().has_restart_ready());
  EXPECT_EQ(out.to_daemon_.back().restart_ready().phase(), proto::Restart::STOP);
  core.on_daemon_response(restart_push(proto::Restart::START, 0, {0, 1}), now);
  EXPECT_FALSE(core.restarting());
  EXPECT_EQ(core.node_ranks(), (std::vector<int32_t>{0, 1}));
  join(11, 0);                        // a rank of the node's new place may now say hello
  core.on_task_exit(0, 3 << 8, now);  // exited with code 3: a failure again
  ASSERT_TRUE(out.to_daemon_.back().has_rank_lost());
  EXPECT_EQ(out.to_daemon_.back().rank_lost().rank(), 0);
  EXPECT_FALSE(out.to_daemon_.back().rank_lost().task_gone());
}

// The daemon repeats a STOP or START on a new link (the old one may have
// lost it): passed on to be answered again, never done twice: a rank of the
// new start that already said hello keeps its connection.
TEST_F(AgentCoreTest, ARepeatedRestartOrderIsAnsweredNotDoneTwice) {
  join(10, 1);
  core.on_daemon_response(restart_push(proto::Restart::STOP, -1, {}), now);
  core.on_daemon_response(restart_push(proto::Restart::START, 0, {0, 1}), now);
  join(11, 0);
  const auto closed = out.closed;
  core.on_daemon_response(restart_push(proto::Restart::START, 0, {0, 1}), now);
  ASSERT_EQ(out.restarts.size(), 3u);
  EXPECT_EQ(out.restarts[2].phase(), proto::Restart::START);
  EXPECT_EQ(out.closed, closed);
  EXPECT_FALSE(core.restarting());
  EXPECT_EQ(core.node_ranks(), (std::vector<int32_t>{0, 1}));
}

TEST_F(AgentCoreTest, ATaskThatEndedForGoodIsTheNodesLoss) {
  core.on_task_gone(2, "its task (the program's keeper) ended", now);
  ASSERT_TRUE(out.to_daemon_.back().has_rank_lost());
  EXPECT_TRUE(out.to_daemon_.back().rank_lost().task_gone());
  EXPECT_EQ(out.to_daemon_.back().rank_lost().rank(), 2);
}

}  // namespace
}  // namespace dp::agent
