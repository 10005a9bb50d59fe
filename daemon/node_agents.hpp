// Node agents (ROLE_NODE): one connection speaking for the ranks of a node.
// Each listed rank keeps its own slot (liveness, progress, barrier arrival,
// goodbye), so hang detection, stragglers and the first failure stay per
// rank while connections, frames and heartbeats follow nodes. Here: their
// hello's checks, a new link taking over an old one, and their requests
// (heartbeat, goodbye, a rank lost, Slurm's signal, their store's refusals).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "step_state.hpp"

namespace dp::daemon {

class NodeAgents {
 public:
  NodeAgents(StepState& step, StepEffects& effects) : step_(step), effects_(effects) {}

  Result<void> check_hello(const proto::Hello& h) const;
  // The node agent's new connection replaces its old one: its ranks keep their
  // slots (no verdict, no second hello in the report); the old connection's
  // pending calls are dropped, barrier arrivals undone, as the agent sends
  // them again on the new one; the old connection is closed.
  void take_over(ConnId old, ConnId conn, Clock::time_point now);
  // A ready peer that holds ranks (its own, or its node's); a tool's agent holds none.
  void register_ranks(ConnId conn, const Peer& p, Clock::time_point now);
  // Listed ranks are heard (with their counters); the others are not.
  void heartbeat(const Call& c, const proto::Heartbeat& m);
  // With a rank: that local rank leaves and the connection stays. Without: the
  // node leaves, and every rank it still holds says goodbye with it.
  void goodbye(const Call& c, const proto::Goodbye& m);
  void rank_lost(const Call& c, const proto::RankLost& m);
  // A node agent heard Slurm's signal for the step (scancel, srun's Ctrl-C).
  void step_signal(const Call& c, const proto::StepSignal& m);
  // A node lost at `now` soon after a signal that ends the step: the user
  // ended it (Slurm then kills what is left, node agents included).
  void explain_by_user_signal(AbortCause& c, Clock::time_point now) const;
  // A node agent refused one of its clients' requests (StoreRefused): counted
  // by node, the first few lines kept for the report and srun's end.
  void store_refused(const Call& c, const proto::StoreRefused& m);

  // Summed over the nodes: other users' connections the node agents'
  // PyTorch stores closed, and their own clients' requests refused.
  uint64_t strangers_refused() const;
  uint64_t requests_refused() const;

 private:
  void rank_goodbye(ConnId conn, int rank, const proto::Progress* final_counters,
                    Clock::time_point now);

  StepState& step_;
  StepEffects& effects_;
  struct SignalSeen {
    int sig = 0;
    std::string host;  // the first node that reported it
    Clock::time_point at;
  };
  // The step's signal from Slurm; one that ends the step is kept over later notices.
  std::optional<SignalSeen> step_signal_;
  // By host, each node's count so far (a node that reconnects sends on from it).
  std::map<std::string, uint64_t> store_strangers_, store_refused_;
};

}  // namespace dp::daemon
