// A hang named for any program, from its ranks' stacks sampled now and then
// (the node agents read them, the daemon keeps this watch). Pure: rounds of
// dp::stacks::RankStacks in, a verdict out; tests replay recorded rounds.
//
// The rule (README "Hangs"): a rank made progress between two rounds when
//  - it is a new process (a rank restarted, or a round saw it first),
//  - it computed: its CPU time (every thread's) grew by at least
//    kBusyShare of the time between the rounds,
//  - its main thread ran at all (its CPU time grew: a loop that mostly
//    sleeps or waits for I/O; a main thread blocked in a collective, a
//    lock or a sleep uses none), or
//  - its main thread's Python frames changed (function, file or line).
// The step made progress when one of its ranks did; a rank that exited or is
// stopped (a suspended job: state T) is not judged, and the clock starts
// again. A rank the round could not read (its node did not answer, or its read
// was not done in time: over_time) is unknown, never stuck: it keeps its last
// round's state, and a hang verdict needs every rank read and not
// progressing. When no rank made progress for the timeout and every rank was
// read, the step hangs: one verdict, named once, until a rank makes progress
// again. Where ranks stay unknown, the step is named after twice the timeout
// as one whose ranks could not be read (`unknown`), which never ends it. So a rank computing for
// minutes between collectives is progress (CPU), ranks all waiting in a collective or asleep are
// not; a spinning wait (NCCL's proxy threads) looks like work and is never named by this watch.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dp/stacks/merge.hpp"

namespace dp::stacks {

inline constexpr double kBusyShare = 0.10;  // of one CPU between two rounds

// How often to read the step for a timeout: an eighth of it (a verdict
// comes within the timeout plus two of these), at least 1 s, at most 15 s.
std::chrono::milliseconds hang_sample_every(std::chrono::milliseconds timeout);

struct HangVerdict {
  std::chrono::milliseconds still{0};  // since the last progress seen
  std::vector<std::string> lines;      // the merged view (format_groups)
  std::string summary;  // one line: each group's first line, "; "-joined, why no frames
  // The odd one out, first in the lines: the one rank that waits on its own
  // work (its input, a file, a sleep: stacks::wait_kind) while the others
  // wait in a collective, else a lone rank among groups that agree (-1: none).
  int odd_rank = -1;
  std::string odd_host;
  // Not a hang: ranks could not be read for twice the timeout while the
  // others made no progress. Named, never a reason to end the step.
  std::vector<int> unknown_ranks;  // ascending; empty: every rank read (a hang)
  bool unknown() const { return !unknown_ranks.empty(); }
};

class HangWatch {
 public:
  using Clock = std::chrono::steady_clock;
  HangWatch(std::chrono::milliseconds timeout, long ticks_per_second);

  // One round's ranks, read at `now`. `complete`: every node answered (a node
  // that did not leaves its ranks out: they are unknown this round).
  std::optional<HangVerdict> observe(Clock::time_point now, const std::vector<RankStacks>& ranks,
                                     bool complete);

 private:
  struct Seen {
    int pid = 0;
    unsigned long long cpu_ticks = 0;
    std::optional<unsigned long long> main_cpu_ticks;  // the kernel's, when it said
    std::string main_frames;                           // empty: no Python frames read
  };
  bool progressed(const Seen& before, const Seen& now, double seconds) const;
  std::optional<HangVerdict> verdict(std::chrono::milliseconds still,
                                     const std::vector<RankStacks>& ranks,
                                     std::vector<int> unknown);

  enum class Named { none, unknown, hang };
  std::chrono::milliseconds timeout_;
  long ticks_per_second_;
  std::map<int, Seen> seen_;  // by rank, at the last round it was read
  std::optional<Clock::time_point> last_round_, still_since_;
  Named named_ = Named::none;
};

// The verdict's one line from a round's merged groups.
std::string hang_summary(const std::vector<StackGroup>& groups,
                         const std::vector<RankStacks>& ranks);

}  // namespace dp::stacks
