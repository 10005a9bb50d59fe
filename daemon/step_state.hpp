// What every part of one step's daemon shares: its settings, where answers
// go, the connections, liveness, the store, the blocking calls, the report,
// the restart's state and the failure once there is one; and the replies
// any part sends. The parts (blocking_calls, step_calls, node_agents,
// restart_runner, step_watches) each hold their own state besides, and reach
// what crosses parts (ending the step, dropping a connection) through
// StepEffects, which the Broker carries out.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "abort_cause.hpp"
#include "broker_limits.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "hello_budget.hpp"
#include "kv_store.hpp"
#include "liveness.hpp"
#include "pending_calls.hpp"
#include "startup_phases.hpp"
#include "step_peers.hpp"
#include "step_report.hpp"
#include "step_restart.hpp"

namespace dp::daemon {

struct BrokerConfig {
  int world_size = 1;
  std::string secret;  // hex, as the tasks get it; never logged
  std::string job_id;
  std::string step_id;
  BrokerLimits limits;
  // The step's node addresses (numeric), as srun gave them: their
  // connections without hello have a budget of their own.
  std::vector<std::string> step_nodes;
  // Fresh nonce for each connection's challenge (tests and the fuzzer pin it).
  std::function<Result<std::string>()> make_nonce;
};

// Where the broker's answers go (the server's sockets, or a test recorder).
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void send(ConnId conn, const proto::Response& r) = 0;
  // Flush what was sent, then close; the broker has already forgotten conn.
  virtual void close(ConnId conn) = 0;
  // A node that cannot be reached (lost, silent) ended the step: its tasks
  // can be ended only by Slurm, which would wait for its node timeout.
  virtual void end_step_in_slurm(const AbortCause& cause) { (void)cause; }
  // A line for the user while the step runs (srun's stderr): a hang named.
  virtual void notice(const std::string& line) { (void)line; }
};

// One request being handled.
struct Call {
  ConnId conn;
  Peer& peer;
  uint64_t id;
  Clock::time_point now;
  proto::Space space;  // of a store operation
};

// The counters stats and the report show.
struct StepCounters {
  uint64_t requests = 0, accepted = 0, rejected_auth = 0, protocol_errors = 0, limit_errors = 0,
           heartbeats = 0, evicted = 0;
  uint64_t relinks = 0;  // node agents that reconnected after an outage
  int agents = 0;        // tools' agents connected
  int nodes = 0;         // node agents connected
  int rank_peers = 0;    // ready connections holding ranks: direct ranks and node agents
};

// What crosses the parts: the Broker carries these out.
class StepEffects {
 public:
  // The step fails with `cause` (or restarts instead, where it may); once.
  virtual void abort_job(AbortCause cause) = 0;
  // Answers `id` with the error, forgets the peer and closes its connection.
  virtual void reject_and_close(ConnId conn, uint64_t id, proto::Code code,
                                std::string message) = 0;
  // Drops the peer (its calls, its ranks' connection); the link stays open.
  virtual void forget_peer(ConnId conn, bool goodbye) = 0;

 protected:
  ~StepEffects() = default;
};

struct StepState {
  StepState(BrokerConfig config, Outbox& outbox, Clock::time_point now);

  void reply_ok(ConnId conn, uint64_t id);
  // Sends r, counting its PROTOCOL and LIMIT refusals.
  void answer(ConnId conn, const proto::Response& r);
  void reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message);
  void reply_error(ConnId conn, uint64_t id, const Error& e);
  // An ABORTED reply names the master node's failure when that ended the step.
  void add_master_failure(proto::Response& r) const;
  // One line of the daemon's log about its step (stderr, which srun's
  // --dp-verbose shows): "dp-rendezvousd: job J step S: line".
  void log(const std::string& line) const;

  BrokerConfig cfg;
  Outbox& out;
  StartupPhases phases;
  StepReport report;
  Liveness live;
  StepPeers peers{live};
  HelloBudget hello_budget;  // peers awaiting hello, by source address
  KvStore store;
  PendingCalls calls;
  std::optional<AbortCause> abort;
  // A step that may restart (--dp-spares, --dp-max-restarts).
  std::optional<StepRestart> restarts;
  StepCounters count;
  std::set<int> nodes_left;  // node agents that said goodbye (their programs end with them)
};

// A failure that peer `p` caused or suffered.
AbortCause cause_of(const Peer& p, AbortCause::How how, std::string message);

}  // namespace dp::daemon
