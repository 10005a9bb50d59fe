// The requests of an authenticated peer on the step's store and the step
// itself: set, get, compare-and-set, wait, barrier, the step's ports, an
// abort and a rank's goodbye. One function per request. (The store-only
// operations: store_ops.hpp and torch_store_ops.hpp; a node agent's own
// requests: node_agents.hpp.)
#pragma once

#include <string>

#include "blocking_calls.hpp"
#include "step_state.hpp"

namespace dp::daemon {

class StepCalls {
 public:
  // Blocking gets, waits and barriers wait in `blocking`; an abort is the
  // Broker's to carry out (`effects`).
  StepCalls(StepState& step, BlockingCalls& blocking, StepEffects& effects);

  void set(const Call& c, const proto::Set& m);
  void get(const Call& c, const proto::Get& m);
  void compare_and_set(const Call& c, const proto::CompareAndSet& m);
  void wait(const Call& c, const proto::Wait& m);
  // A rank arrives alone; a node agent's call brings its listed ranks together (folded).
  void barrier(const Call& c, const proto::Barrier& m);
  void abort(const Call& c, const proto::Abort& m);
  // The master node's agent publishes the step's ports (or why it has none)
  // once: kept write-once under kStepPortsKey for the other nodes' agents, and
  // named in the report. Only the node holding rank 0 speaks for them.
  void publish_ports(const Call& c, const proto::PublishPorts& m);
  // A rank's own goodbye (a node agent's: NodeAgents::goodbye).
  void goodbye(const Call& c, const proto::Goodbye& m);

 private:
  // false: refused, and the caller answered.
  bool store_value(const Call& c, const std::string& key, const std::string& value,
                   bool once = false);

  StepState& step_;
  BlockingCalls& blocking_;
  StepEffects& effects_;
};

}  // namespace dp::daemon
