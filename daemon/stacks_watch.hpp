// When the daemon reads its ranks' stacks on its own, and what a round says
// of a hang: the hang watch's rounds (every hang_sample_every(hang_timeout)),
// the straggler watch's (twice a second while one is suspected, its
// flight-recorder reads each block, and the block's own clock). Pure over
// the clock and the rounds' answers: the broker starts the rounds
// (StacksRounds) and carries out a hang's verdict.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "abort_cause.hpp"
#include "dp/stacks/flight_recorder.hpp"
#include "dp/stacks/hang_watch.hpp"
#include "straggler_report.hpp"

namespace dp::daemon {

class StacksWatch {
 public:
  // hang_timeout 0: no hang watch; by_user: the user chose it (the lines say so).
  StacksWatch(std::chrono::milliseconds hang_timeout, bool by_user, long ticks_per_second,
              Clock::time_point now);

  // A watch round due at `now` (none: round false), and whether it reads the
  // flight recorders; the round counts as started. s: the straggler watch, if on.
  struct Due {
    bool round = false;
    bool flight = false;
  };
  Due due(Clock::time_point now, const StragglerReport* s);

  // The straggler watch's block ended at `now`: its length in seconds (none:
  // not yet). The first block starts at the watch's start.
  std::optional<double> block_end(Clock::time_point now);

  // A hang a watch round found: the cause, which detector ("flight ...",
  // "stacks #N"), the stacks' view, and whether it may end the step (ranks
  // that could not be read are named, never judged stuck).
  struct Hang {
    AbortCause cause;
    std::string which;
    std::vector<std::string> view;
    bool may_end = true;
  };
  // A finished watch round's stacks and flight recorders. The straggler
  // watch hears where each rank waits; a hang is judged unless libdp's
  // counters judge them (counts_collectives).
  std::optional<Hang> judge(const std::vector<stacks::RankStacks>& got,
                            const std::vector<stacks::RankFlight>& flights, bool complete,
                            Clock::time_point now, StragglerReport* s, bool counts_collectives);

 private:
  std::chrono::milliseconds hang_timeout_;
  bool by_user_;
  std::optional<stacks::HangWatch> hang_;  // while hang_timeout is on
  // The latest round of any kind, the hang watch's latest, and the latest
  // that read the flight recorders.
  Clock::time_point last_round_, last_hang_round_, last_flight_round_{};
  Clock::time_point last_block_, next_block_;
  uint64_t stack_hangs_ = 0;  // hangs the stacks named
};

}  // namespace dp::daemon
