// The rendezvous broker of one step: it routes each connection's frames and
// the server's ticks to the step's parts and carries out what crosses them
// (ending the step, dropping a connection). Pure logic with no sockets: the
// server feeds it frames and ticks, it answers through Outbox. This is what
// the unit tests and the fuzzer drive directly.
//
// The parts, each with its own state and unit tests (daemon/README.md):
// StepState (step_state.hpp: what they share), BlockingCalls, StepCalls
// (the store and step requests), NodeAgents, RestartRunner, StepWatches
// (hangs, stragglers, stacks); below them the store (kv_store, store_ops,
// torch_store_ops), StepPeers, Liveness, PendingCalls, HelloBudget,
// StepRestart, StacksRounds, StacksWatch and StepReport. Files: broker.cpp
// (hello, dispatch, abort), broker_hello.cpp (before hello),
// broker_stats.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "blocking_calls.hpp"
#include "node_agents.hpp"
#include "restart_runner.hpp"
#include "step_calls.hpp"
#include "step_state.hpp"
#include "step_watches.hpp"

namespace dp::daemon {

class Broker : private StepEffects {
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
  // The keepalive push to those of conns that are authenticated peers (the
  // server picks the connections that got no frame lately: any frame tells a
  // client the daemon lives).
  void ping(const std::vector<ConnId>& conns);

  uint32_t max_frame_bytes(ConnId conn) const;
  bool knows(ConnId conn) const { return step_.peers.count(conn) != 0; }
  size_t connections() const { return step_.peers.size(); }
  size_t pending_calls() const { return step_.calls.size(); }
  int unauthenticated() const { return step_.hello_budget.count(); }
  // Every rank of the world said goodbye and nobody is connected.
  bool finished() const;
  bool aborted() const { return step_.abort.has_value(); }
  const std::optional<AbortCause>& abort_cause() const { return step_.abort; }
  const Liveness& liveness() const { return step_.live; }
  // The counters and lines; with_report: also the report's JSON and rank
  // table, whose cost grows with the world (a million ranks: seconds).
  proto::Stats stats(bool with_report = true) const;
  std::string startup_summary() const { return step_.phases.summary(); }
  // The step report: JSON, srun's start-up line, the first failure.
  const StepReport& report() const { return step_.report; }
  // Node agents that replaced their connection after an outage.
  uint64_t relinks() const { return step_.count.relinks; }
  std::string report_json(Clock::time_point now) const;
  std::string startup_line() const { return step_.report.startup_line(step_.phases); }

  // dp-top --stacks (step_watches.hpp): every node agent is pushed an ask to
  // read its ranks; `done` gets the merged lines once all answered, or from
  // expire_stacks once the deadline passed (nodes still out are named). A
  // second ask while one runs joins it. Returns the deadline; the server's
  // tick (every 100 ms) calls expire_stacks.
  using StacksDone = StacksRounds::Done;
  static constexpr std::chrono::milliseconds kStacksWait = StacksRounds::kWait;
  Clock::time_point ask_stacks(StacksDone done, Clock::time_point now) {
    return watches_.ask(std::move(done), now);
  }
  void expire_stacks(Clock::time_point now) { watches_.expire(now); }

 private:
  // StepEffects
  void abort_job(AbortCause cause) override;
  void reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message) override;
  void forget_peer(ConnId conn, bool goodbye) override;

  // broker.cpp
  Result<void> check_hello(const Peer& p, const proto::Hello& h) const;
  void handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h,
                    Clock::time_point now);
  void handle_request(ConnId conn, Peer& p, const proto::Request& req, Clock::time_point now);
  // The operations on the store alone (store_ops.hpp, torch_store_ops.hpp):
  // answered, their keys' waiters woken; false: `req` is none of them.
  bool store_alone(const Call& c, const proto::Request& req);
  // The abort a ready peer's lost connection means (none for agents, or a node whose ranks left).
  std::optional<AbortCause> loss_of(ConnId conn, const Peer& p, Clock::time_point now) const;
  void judge_silence(Clock::time_point now);
  // broker_hello.cpp
  void evict_before_hello(ConnId conn, Clock::time_point now);

  StepState step_;
  BlockingCalls blocking_{step_};
  StepCalls ops_{step_, blocking_, *this};
  NodeAgents node_agents_{step_, *this};
  RestartRunner restart_{step_, blocking_, *this};
  StepWatches watches_;
  Clock::time_point eviction_logged_{};
  uint64_t evictions_unlogged_ = 0;
};

}  // namespace dp::daemon
