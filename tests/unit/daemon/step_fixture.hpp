// A step's shared state without a Broker: a recording Outbox, a recording
// StepEffects, and ready peers placed by hand. The parts' tests
// (blocking_calls_test.cpp, step_calls_test.cpp, node_agents_test.cpp,
// restart_runner_test.cpp, step_watches_test.cpp) drive one part each.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "step_state.hpp"

namespace dp::daemon::test {

struct Recorder : Outbox {
  std::map<ConnId, std::vector<proto::Response>> sent;
  std::vector<ConnId> closed;
  void send(ConnId c, const proto::Response& r) override { sent[c].push_back(r); }
  void close(ConnId c) override { closed.push_back(c); }
  void end_step_in_slurm(const AbortCause& c) override { slurm_ends.push_back(c.how); }
  std::vector<AbortCause::How> slurm_ends;  // steps ended through slurmctld
  void notice(const std::string& line) override { notices.push_back(line); }
  std::vector<std::string> notices;  // srun's stderr
  proto::Response last(ConnId c) { return sent[c].empty() ? proto::Response() : sent[c].back(); }
};

// What a part asked the Broker to do; a forgotten peer leaves the step's peers.
struct EffectsLog : StepEffects {
  explicit EffectsLog(StepState& step) : step_(step) {}
  void abort_job(AbortCause cause) override { aborts.push_back(std::move(cause)); }
  void reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message) override {
    step_.reply_error(conn, id, code, std::move(message));
    rejected.push_back(conn);
    forget_peer(conn, false);
  }
  void forget_peer(ConnId conn, bool goodbye) override {
    forgotten.push_back(conn);
    if (auto it = step_.peers.find(conn); it != step_.peers.end()) step_.peers.erase(it);
    (void)goodbye;
  }
  std::vector<AbortCause> aborts;
  std::vector<ConnId> rejected, forgotten;

 private:
  StepState& step_;
};

class StepTest : public ::testing::Test {
 protected:
  explicit StepTest(int world = 4, BrokerConfig c = {})
      : step_(config(world, std::move(c)), out_, t0_) {}
  static BrokerConfig config(int world, BrokerConfig c) {
    c.world_size = world;
    c.job_id = "7";
    c.step_id = "0";
    c.make_nonce = [] { return Result<std::string>(std::string(32, 'n')); };
    return c;
  }
  // A ready node agent on `conn` for node index `node` holding `ranks`.
  Peer& node(ConnId conn, int node, const std::string& host, std::vector<int> ranks) {
    Peer p;
    p.state = PeerState::ready;
    p.role = proto::ROLE_NODE;
    p.host = host;
    p.node = node;
    p.node_ranks = ranks;
    step_.peers.emplace(conn, p);
    for (int r : ranks) step_.live.connected(r, conn, host, t0_);
    ++step_.count.nodes;
    ++step_.count.rank_peers;
    return step_.peers[conn];
  }
  // A ready rank connecting by itself.
  Peer& rank(ConnId conn, int r, const std::string& host) {
    Peer p;
    p.state = PeerState::ready;
    p.role = proto::ROLE_RANK;
    p.rank = r;
    p.host = host;
    step_.peers.emplace(conn, p);
    step_.live.connected(r, conn, host, t0_);
    ++step_.count.rank_peers;
    return step_.peers[conn];
  }
  Call call(ConnId conn, uint64_t id, Clock::time_point now,
            proto::Space space = proto::SPACE_STEP) {
    return Call{conn, step_.peers[conn], id, now, space};
  }

  Clock::time_point t0_ = Clock::time_point{} + std::chrono::hours(1);
  Recorder out_;
  StepState step_;
  EffectsLog effects_{step_};
};

}  // namespace dp::daemon::test
