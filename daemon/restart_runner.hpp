// The step restarts in place instead of ending (--dp-spares,
// --dp-max-restarts). The core decides (spares.hpp: which spare takes which
// node rank, whether the budget allows it; restart_machine.hpp: the phases);
// StepRestart (step_restart.hpp) holds the state and what to push. This part
// carries it out through the node agents: STOP every program, fence a lost
// node, wait for every node, clear the programs' keys and calls, START them
// again (a spare in a lost node's place), time the phases, and once every
// rank is done release the spares and end a lost node's tasks in Slurm,
// which srun would otherwise wait for.
#pragma once

#include <string_view>

#include "blocking_calls.hpp"
#include "step_state.hpp"

namespace dp::daemon {

class RestartRunner {
 public:
  RestartRunner(StepState& step, BlockingCalls& blocking, StepEffects& effects)
      : step_(step), blocking_(blocking), effects_(effects) {}

  // True when a restart (or nothing: a spare was lost) follows instead of
  // the abort; otherwise the cause's text says why there is none.
  bool instead(AbortCause& cause);
  // A frame or the drop of a fenced node's link (no peer any more): true
  // when `conn` was one.
  bool fenced_frame(ConnId conn, std::string_view payload, Clock::time_point now);
  bool fenced_drop(ConnId conn, Clock::time_point now);
  // A node agent's answer to STOP or START.
  void ready(const Call& c, const proto::RestartReady& m);
  // A node agent left (or was dropped): no answer will come from it.
  void node_left(const Peer& p, Clock::time_point now);
  // Phase deadlines, the rendezvous and first step timed, the step's end.
  void watch(Clock::time_point now);
  // The restart under way is told (its line), as far as it got.
  void finish_record(Clock::time_point now);

 private:
  // further: a node lost while a restart is under way joins it (no new count).
  void begin(const AbortCause& cause, const RestartPlan& plan, bool further, Clock::time_point now);
  // The same for a per-node launcher's step (torchrun restarts its workers).
  bool launcher_loss(AbortCause& cause, Setback what, Clock::time_point now);
  // torchrun's launchers left would wait out a lost one's keep-alive: its
  // heartbeats in their rendezvous are aged instead (torchrun_launchers.hpp).
  void age_lost_launchers(const AbortCause& cause, Clock::time_point now);
  // A lost node's place is another's: FENCE to its agent (which kills its
  // programs' trees), and its spare's START waits until they are known dead.
  void fence_node(const AbortCause& cause, Clock::time_point now);
  // Carries out what the restart machine says, and prints its lines.
  void run(RestartMachine::Commands commands, Clock::time_point now);
  void start_programs(Clock::time_point now);

  StepState& step_;
  BlockingCalls& blocking_;
  StepEffects& effects_;
};

}  // namespace dp::daemon
