// The rendezvous broker: key/value store, blocking gets, waits, named
// barriers, abort and liveness of one step's ranks. Pure logic with no
// sockets: the server feeds it frames and ticks, it answers through Outbox.
// This is what the unit tests and the fuzzer drive directly.
//
// Files: broker.cpp (connections, hello, dispatch, abort), broker_ops.cpp
// (one function per request), broker_torch_ops.cpp (what PyTorch's store
// tells the report; its own operations: torch_store_ops.cpp),
// broker_nodes.cpp (node agents: one connection speaking for several ranks),
// broker_waiters.cpp (answering blocking calls; pending_calls.cpp keeps
// them, their barriers and deadlines), broker_stats.cpp,
// broker_stacks.cpp (with stacks_rounds.cpp), broker_restart.cpp (carries
// out core's RestartMachine; step_restart.cpp decides what to push);
// below them kv_store.cpp (the store), liveness.cpp, step_report.cpp and
// broker_limits.hpp, which include no broker header.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "broker_limits.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/restart_machine.hpp"
#include "dp/result.hpp"
#include "dp/spares.hpp"
#include "dp/stacks/flight_recorder.hpp"
#include "dp/stacks/hang_watch.hpp"
#include "dp/stacks/merge.hpp"
#include "hello_budget.hpp"
#include "kv_store.hpp"
#include "liveness.hpp"
#include "pending_calls.hpp"
#include "restart_times.hpp"
#include "stacks_rounds.hpp"
#include "stacks_watch.hpp"
#include "startup_phases.hpp"
#include "step_peers.hpp"
#include "step_report.hpp"
#include "step_restart.hpp"
#include "torchrun_launchers.hpp"

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

// One line of the daemon's log about its step (stderr, which srun's
// --dp-verbose shows): "dp-rendezvousd: job J step S: line".
void log_step(const BrokerConfig& cfg, const std::string& line);

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

class Broker {
 public:
  Broker(BrokerConfig cfg, Outbox& out, Clock::time_point now);

  // Sends the connection its challenge. Connections without hello are
  // counted per source address (numeric; empty: unknown, as in tests):
  // past a source's cap its own oldest is evicted, past the whole budget
  // the oldest of the source holding the most (never a node of the step
  // within its share; broker_hello.cpp).
  void on_connect(ConnId conn, Clock::time_point now, const std::string& source = {});
  // One received frame body. Malformed input gets an error reply; the
  // connection is closed when its framing or authentication cannot be trusted.
  void on_frame(ConnId conn, std::string_view payload, Clock::time_point now);
  // The frame announced more bytes than the limit allows; head: its first
  // bytes (FrameDecoder::frame_head). An authenticated peer's request is
  // refused (LIMIT, under the id the head holds) and true returned: the
  // caller skips the frame and the connection stays, so no one request ends
  // a step. Before hello the connection is closed (false).
  bool on_oversized_frame(ConnId conn, uint32_t announced, uint32_t limit,
                          std::string_view head = {});
  // The socket closed or failed (not after close() from the broker).
  void on_disconnect(ConnId conn, Clock::time_point now);
  // Deadlines: blocking calls, hello, silence. Call a few times a second.
  void on_tick(Clock::time_point now);
  // Connections of ranks about to be judged silent: the server reads what
  // they sent before the next on_tick, so waiting heartbeats count.
  std::vector<ConnId> silence_suspects(Clock::time_point now) const;
  // The keepalive push to every authenticated peer (the server calls it each
  // second); quiet, when given, picks those that got nothing else lately (any
  // frame tells a client the daemon lives, and at 16 384 node agents a ping
  // each is as many sends as the whole start-up).
  void ping_all(const std::function<bool(ConnId)>& quiet = {});

  uint32_t max_frame_bytes(ConnId conn) const;
  bool knows(ConnId conn) const { return peers_.count(conn) != 0; }
  size_t connections() const { return peers_.size(); }
  size_t pending_calls() const { return calls_.size(); }
  int unauthenticated() const { return hello_budget_.count(); }
  // Every rank of the world said goodbye and nobody is connected.
  bool finished() const;
  bool aborted() const { return abort_.has_value(); }
  const std::optional<AbortCause>& abort_cause() const { return abort_; }
  const Liveness& liveness() const { return live_; }
  // The counters and lines; with_report: also the report's JSON and rank
  // table, whose cost grows with the world (a million ranks: seconds).
  proto::Stats stats(bool with_report = true) const;
  std::string startup_summary() const { return phases_.summary(); }
  // The step report: JSON, srun's start-up line, the first failure.
  const StepReport& report() const { return report_; }
  // Node agents that replaced their connection after an outage.
  uint64_t relinks() const { return relinks_; }
  std::string report_json(Clock::time_point now) const;
  std::string startup_line() const { return report_.startup_line(phases_); }

  // dp-top --stacks (broker_stacks.cpp): every node agent is pushed an ask to
  // read its ranks; `done` gets the merged lines once all answered, or from
  // expire_stacks once the deadline passed (nodes still out are named). A
  // second ask while one runs joins it. Returns the deadline; the server's
  // tick (every 100 ms) calls expire_stacks.
  using StacksDone = StacksRounds::Done;
  static constexpr std::chrono::milliseconds kStacksWait = StacksRounds::kWait;
  Clock::time_point ask_stacks(StacksDone done, Clock::time_point now);
  void expire_stacks(Clock::time_point now);

 private:
  struct Call {  // one request being handled
    ConnId conn;
    Peer& peer;
    uint64_t id;
    Clock::time_point now;
    proto::Space space;  // of a store operation
  };

  // broker.cpp
  Result<void> check_hello(const Peer& p, const proto::Hello& h) const;
  void handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h,
                    Clock::time_point now);
  void handle_request(ConnId conn, Peer& p, const proto::Request& req, Clock::time_point now);
  void reply_ok(ConnId conn, uint64_t id);
  // Sends r, counting its PROTOCOL and LIMIT refusals.
  void answer(ConnId conn, const proto::Response& r);
  // The operations on the store alone (store_ops.hpp, torch_store_ops.hpp):
  // answered, their keys' waiters woken; false: `req` is none of them.
  bool store_alone(const Call& c, const proto::Request& req);
  void reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message);
  void reply_error(ConnId conn, uint64_t id, const Error& e);
  // An ABORTED reply names the master node's failure when that ended the step.
  void add_master_failure(proto::Response& r) const;
  void reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message);
  void forget_peer(ConnId conn, bool goodbye = false);
  void abort_job(AbortCause cause);
  AbortCause cause_of(const Peer& p, AbortCause::How how, std::string message) const;
  // The abort a ready peer's lost connection means (none for agents, or a node whose ranks left).
  std::optional<AbortCause> loss_of(ConnId conn, const Peer& p, Clock::time_point now) const;
  void judge_silence(Clock::time_point now);
  void judge_hang(Clock::time_point now);
  // A hang found (libdp's counters or the stacks): named on srun's stderr,
  // in the report and dp-top; the step ended too with end_on_hang.
  // `which`: the same hang, however long it lasts, is named once.
  // may_end false: ranks could not be read (unknown is not stuck): named, never ended.
  void hang_found(AbortCause cause, const std::string& which, const std::vector<std::string>& view,
                  bool may_end = true);
  // broker_hello.cpp
  void evict_before_hello(ConnId conn, Clock::time_point now);
  // broker_ops.cpp: one per operation
  void op_goodbye(const Call& c, const proto::Goodbye& m);
  void op_set(const Call& c, const proto::Set& m);
  void op_get(const Call& c, const proto::Get& m);
  void op_compare_and_set(const Call& c, const proto::CompareAndSet& m);
  void op_wait(const Call& c, const proto::Wait& m);
  void op_barrier(const Call& c, const proto::Barrier& m);
  void op_abort(const Call& c, const proto::Abort& m);
  void op_publish_ports(const Call& c, const proto::PublishPorts& m);
  bool store_value(const Call& c, const std::string& key, const std::string& value,
                   bool once = false);
  void mark_fetched(ConnId conn, const Peer& p, Clock::time_point now);
  // broker_nodes.cpp: node agents (ROLE_NODE)
  Result<void> check_node_hello(const proto::Hello& h) const;
  void take_over_node(ConnId old, ConnId conn, Clock::time_point now);
  void register_ranks(ConnId conn, Peer& p, Clock::time_point now);
  void node_heartbeat(const Call& c, const proto::Heartbeat& m);
  void node_goodbye(const Call& c, const proto::Goodbye& m);
  void rank_goodbye(ConnId conn, int rank, const proto::Progress* final_counters,
                    Clock::time_point now);
  void op_rank_lost(const Call& c, const proto::RankLost& m);
  // A node agent heard Slurm's signal for the step (scancel, srun's Ctrl-C).
  void op_step_signal(const Call& c, const proto::StepSignal& m);
  // A node lost at `now` soon after a signal that ends the step: the user
  // ended it (Slurm then kills what is left, node agents included).
  void explain_by_user_signal(AbortCause& c, Clock::time_point now) const;
  // broker_restart.cpp: the step restarts in place instead of ending
  // (--dp-spares, --dp-max-restarts). True when a restart (or nothing: a
  // spare was lost) follows instead of the abort; otherwise the cause's text
  // says why there is none.
  bool restart_instead(AbortCause& cause);
  // further: a node lost while a restart is under way joins it (no new count).
  void begin_restart(const AbortCause& cause, const RestartPlan& plan, bool further,
                     Clock::time_point now);
  // The same for a per-node launcher's step (torchrun restarts its workers).
  bool launcher_loss(AbortCause& cause, Setback what, Clock::time_point now);
  // A node agent's new link while the restart waits for its answer: the
  // STOP or START sent on the old one may never have reached it.
  // The START a node holding node rank `nr` is sent: its ranks anew.
  // torchrun's launchers left would wait out a lost one's keep-alive: its
  // heartbeats in their rendezvous are aged instead (torchrun_launchers.hpp).
  void age_lost_launchers(const AbortCause& cause, Clock::time_point now);
  // A lost node's place is another's: FENCE to its agent (which kills its
  // programs' trees), and its spare's START waits until they are known dead.
  void fence_node(const AbortCause& cause, Clock::time_point now);
  // A frame or the drop of a fenced node's link (no peer any more): true
  // when `conn` was one.
  bool fenced_frame(ConnId conn, std::string_view payload, Clock::time_point now);
  bool fenced_drop(ConnId conn, Clock::time_point now);
  // Carries out what the restart machine says, and prints its lines.
  void run_restart(RestartMachine::Commands commands, Clock::time_point now);
  void start_programs(Clock::time_point now);
  void op_restart_ready(const Call& c, const proto::RestartReady& m);
  // A node agent left (or was dropped): no answer will come from it.
  void restart_node_left(const Peer& p, Clock::time_point now);
  // A node that holds a node rank but has no agent now (its drop unheard):
  // lost, as if heard; false when every such node has one.
  // Phase deadlines, the rendezvous and first step timed, the step's end.
  void watch_restarts(Clock::time_point now);
  void finish_record(Clock::time_point now);
  // A node agent that held no ranks (a spare) left or was lost.
  std::set<int> nodes_left_;  // node agents that said goodbye (their programs end with them)
  // Every live node agent said goodbye after the step completed: a lost
  // node's tasks keep srun waiting until slurmctld ends the step.
  std::optional<StepRestart> restarts_;
  // An agent's ADD announced PyTorch store clients up (Add.workers, counted
  // from TCPStore's own handshake): every rank's after a restart marks its
  // rendezvous.

  // broker_stacks.cpp
  void op_stacks_answer(const Call& c, const proto::StacksAnswer& m);
  void finish_stacks(Clock::time_point now);
  // Starts a round when none runs; false when no node agent is connected.
  // flight: the agents also read their NCCL ranks' flight recorders.
  bool start_stacks_round(Clock::time_point now, bool flight = false);
  // The watch rounds: the hang watch's (every hang_sample_every(hang_timeout)),
  // the straggler watch's (where the others wait; the flight recorders each block).
  void watch_stacks(Clock::time_point now);
  // broker_straggler.cpp: the straggler watch's blocks and its lines.
  void ask_samples(ConnId conn);
  void watch_stragglers(Clock::time_point now);
  // broker_torch_ops.cpp (PyTorch's own operations: torch_store_ops.hpp).
  // PyTorch's own timeout error names neither the keys a wait was for nor
  // who never set them, so the daemon does, with the step's first failure:
  // when a wait is given up (the clients' timeout, or they left) and, for
  // those still waiting, when the step fails. Once per key, for the first
  // few keys; logged and listed only once the step failed.
  void torch_note_unset(const Peer& p, const Waiter& w, Clock::time_point now, bool given_up);
  // A node agent refused one of its clients' requests (StoreRefused): counted
  // by node, the first few lines kept for the report and srun's end.
  void torch_refused(const Call& c, const proto::StoreRefused& m);
  // broker_waiters.cpp: answering the blocking calls (pending_calls.hpp
  // keeps them, their limits and their timeout messages).
  // A get or wait on `keys`; timeout_ms 0: no deadline.
  void add_waiter(const Call& c, WaitKind kind, std::vector<std::string> keys, uint32_t timeout_ms);
  void finish_waiter(uint64_t wid, Clock::time_point now);
  // A node agent's caller gave up a get or wait: it is dropped unanswered.
  void op_cancel_call(const Call& c, const proto::CancelCall& m);
  void fail_waiter(uint64_t wid, proto::Code code, std::string message);
  void key_changed(proto::Space space, const std::string& key, Clock::time_point now);
  void expire_waiters(Clock::time_point now);

  BrokerConfig cfg_;
  Outbox& out_;
  StartupPhases phases_;
  StepReport report_;

  Liveness live_;
  StepPeers peers_{live_};
  HelloBudget hello_budget_;  // peers awaiting hello, by source address
  Clock::time_point eviction_logged_{};
  uint64_t evictions_unlogged_ = 0;
  int agents_ = 0;
  int nodes_ = 0;       // node agents connected
  int rank_peers_ = 0;  // ready connections holding ranks: direct ranks and node agents
  KvStore store_;

  PendingCalls calls_;

  std::optional<AbortCause> abort_;
  struct SignalSeen {
    int sig = 0;
    std::string host;  // the first node that reported it
    Clock::time_point at;
  };
  // The step's signal from Slurm; one that ends the step is kept over later notices.
  std::optional<SignalSeen> step_signal_;

  uint64_t requests_ = 0, accepted_ = 0, rejected_auth_ = 0, protocol_errors_ = 0,
           limit_errors_ = 0, heartbeats_ = 0, evicted_ = 0;
  // By host, each node's count so far: other users' connections the node
  // agents' PyTorch stores closed, and their own clients' requests refused.
  std::map<std::string, uint64_t> store_strangers_, store_refused_;
  uint64_t relinks_ = 0;  // node agents that reconnected after an outage

  StacksRounds rounds_;  // the stacks round in flight, and the survivors' at the failure
  StacksWatch watch_;    // when the watch rounds are due, and what they say of a hang
};

}  // namespace dp::daemon
