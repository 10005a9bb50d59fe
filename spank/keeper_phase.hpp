// Where a task keeper's program stands, as one value: the keeper's rule,
// pure, so that no two flags can disagree and every pair of phase and event
// is tested (KeeperPhase.*). The keeper (task_keeper.cpp) feeds it what
// happened and does what it answers.
#pragma once

namespace dp::spank {

enum class KeeperPhase {
  idle,             // no program: before the first start, or between generations
  running,          // the program runs
  stopping,         // a stop was ordered: until nothing of the program's tree is left
  ending,           // the agent said exit while it ran (a libdp program's goodbye comes
                    // before its process ends): the keeper ends with the program
  stopping_to_end,  // exit said while stopping: the keeper ends once the tree is gone
};

enum class KeeperEvent {
  started,        // the program was forked
  program_ended,  // the program itself ended (its tree may live on)
  stop_ordered,   // the agent's stop or fence
  tree_gone,      // nothing of the program's tree is left
  exit_ordered,   // the agent's exit
  agent_lost,     // the agent's connection ended
};

// Its program's tree is being stopped (SIGTERM sent, SIGKILL due).
constexpr bool stopping(KeeperPhase p) {
  return p == KeeperPhase::stopping || p == KeeperPhase::stopping_to_end;
}

struct KeeperStep {
  KeeperPhase phase;
  bool end_keeper = false;  // the keeper ends now (as its program's last end did)
};

// `agent` says whether the agent is still connected: without it a program's
// end, or its stop's, ends the keeper (nothing of the step may run unseen).
constexpr KeeperStep keeper_step(KeeperPhase p, KeeperEvent e, bool agent) {
  using P = KeeperPhase;
  switch (e) {
    case KeeperEvent::started: return {P::running};
    case KeeperEvent::program_ended:
      if (p == P::running) return {P::idle, !agent};
      if (p == P::ending) return {P::ending, true};
      return {p};  // stopping: the rest of the tree is waited for
    case KeeperEvent::stop_ordered:
      return {p == P::ending || p == P::stopping_to_end ? P::stopping_to_end : P::stopping};
    case KeeperEvent::tree_gone:
      if (p == P::stopping) return {P::idle, !agent};
      if (p == P::stopping_to_end) return {p, true};
      return {p};
    case KeeperEvent::exit_ordered:
      if (p == P::running) return {P::ending};
      if (p == P::stopping) return {P::stopping_to_end};
      return {p, p == P::idle};
    case KeeperEvent::agent_lost:
      // A program told to exit is waited for; anything else ends with the agent.
      return {p, p != P::ending && p != P::stopping_to_end};
  }
  return {p};
}

}  // namespace dp::spank
