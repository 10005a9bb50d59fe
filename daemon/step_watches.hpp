// The watches over a running step: hangs (libdp's counters, or the stacks
// and NCCL flight recorders the node agents read), stragglers, and dp-top
// --stacks. The node agents read their own ranks (only they run as the
// job's user beside them); the daemon merges. Nothing here blocks: the ask
// is a push, answers are requests without reply, and a round ends when the
// last node answered or at its deadline (the server's tick). StacksRounds
// keeps the rounds, StacksWatch says when they are due and what a round says
// of a hang, StragglerReport judges the blocks.
#pragma once

#include <chrono>

#include "stacks_rounds.hpp"
#include "stacks_watch.hpp"
#include "step_state.hpp"

namespace dp::daemon {

class StepWatches {
 public:
  StepWatches(StepState& step, StepEffects& effects, Clock::time_point now);

  // The running step's watches, each tick: a hang named (or the step ended),
  // a stacks round started, a straggler block judged.
  void tick(Clock::time_point now);
  // dp-top --stacks: every node agent is pushed an ask to read its ranks;
  // `done` gets the merged lines once all answered, or from expire once the
  // deadline passed (nodes still out are named). A second ask while one runs
  // joins it. Returns the deadline; the server's tick (every 100 ms) calls expire.
  Clock::time_point ask(StacksRounds::Done done, Clock::time_point now);
  void expire(Clock::time_point now);
  void answer(const Call& c, const proto::StacksAnswer& m);
  // The straggler watch asks each node agent once, after its hello, to look
  // at its ranks; the counts come with its heartbeats.
  void ask_samples(ConnId conn);

 private:
  void judge_hang(Clock::time_point now);
  // A hang found (libdp's counters or the stacks): named on srun's stderr,
  // in the report and dp-top; the step ended too with end_on_hang.
  // `which`: the same hang, however long it lasts, is named once.
  // may_end false: ranks could not be read (unknown is not stuck): named, never ended.
  void hang_found(AbortCause cause, const std::string& which, const std::vector<std::string>& view,
                  bool may_end = true);
  // Starts a round when none runs; false when no node agent is connected.
  // flight: the agents also read their NCCL ranks' flight recorders.
  bool start_round(Clock::time_point now, bool flight = false);
  // The watch rounds: the hang watch's (every hang_sample_every(hang_timeout)),
  // the straggler watch's (where the others wait; the flight recorders each block).
  void watch_stacks(Clock::time_point now);
  void finish(Clock::time_point now);
  // The straggler watch's blocks and its lines.
  void watch_stragglers(Clock::time_point now);

  StepState& step_;
  StepEffects& effects_;
  StacksRounds rounds_;  // the stacks round in flight, and the survivors' at the failure
  StacksWatch watch_;    // when the watch rounds are due, and what they say of a hang
};

}  // namespace dp::daemon
