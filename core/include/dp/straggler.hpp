// The straggler verdict (issue 55): which rank, or which node's ranks, the
// others wait for, named once, again when it changes, and when it recovers.
// Pure: blocks of per-rank figures in, verdicts out; tests replay recorded
// blocks (tests/fixtures/straggler).
//
// The input is what a source says of each rank over one block of a few
// seconds: the share of it the rank waited for its peers inside a
// collective, the share it waited on its own work instead (its input
// pipeline, a file read, a sleep: issue 68) and on what, how many looks
// those shares rest on, its CPU time, and where it waited. Each source
// fills the same RankShare, so the rule never knows which one spoke:
//  - the node agents' samples of every rank's main thread (any program:
//    asleep in futex is waiting, stacks/straggler_samples.hpp);
//  - libdp's collective counters (exact: time inside collectives);
//  - a later source, such as per-collective timings of NCCL's flight
//    recorder (where a GPU rank spins while it waits, so the CPU view cannot
//    tell waiting from work), adds a converter to RankShare and a Watch of
//    its own; nothing here changes.
//
// The rule (README "Stragglers"): in each block, a rank's lead is the
// others' median share of waiting in collectives minus its own. A rank that
// waits on its own work is not waiting for its peers: the ranks the
// collectives wait for lead, whatever they do instead (compute, wait on
// their input, read a file), and a collective's root, in which the others
// wait, leads no more than they do. Over the window (the last `window`
// blocks), a rank is a straggler when the median of its leads is
// at least `threshold` and its lead is at least half the threshold in all
// but one of its blocks: the others wait for it consistently, not in one
// burst (a checkpoint, a pause). A straggler's node-mate that meets the same
// rule at half the threshold, against the ranks that are not stragglers, is
// named with it (the others wait for the node).
// Stragglers are a minority (at most half the ranks judged). Named once;
// named again when the set changes; named recovered only when the others'
// waiting for every named rank stayed low for a whole window (judged in
// every block of it, the median of its leads under half the threshold, a
// lead of the whole threshold in one block at most): a straggler still
// behind now and then is not recovered.
#pragma once

#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dp::straggler {

struct Settings {
  double threshold = 0.10;  // the lead, a share of the time, at which a straggler is named
  int window = 6;           // blocks judged together
  int min_blocks = 4;       // a rank judged in fewer of the window's blocks is not named
  double min_looks = 20;    // a sampled share resting on fewer looks is no evidence
};

// A share measured, not sampled (libdp's counters, a flight recorder's timings).
inline constexpr double kExact = 1e9;

// A rank's waits on its own work instead of its peers, by what: shares of a
// block, 0..1.
struct OwnWaits {
  double input = 0;  // its input pipeline (a DataLoader)
  double file = 0;   // file reads
  double sleep = 0;  // sleeps
  double other = 0;  // anything else: a queue, a lock, a socket
  double total() const { return input + file + sleep + other; }
};

// What one source says of one rank over one block.
struct RankShare {
  int rank = -1;
  std::string host;
  double waiting = 0;         // share of the block it waited for peers inside a collective, 0..1
  double looks = 0;           // samples behind `waiting`; kExact for measured time
  std::optional<double> cpu;  // CPU seconds per second over the block; none: not known
  std::string where;  // where a read saw it wait ("all_reduce at train.py:122"); "": unknown
  OwnWaits own;       // what it waited on instead; none known: all 0
};

struct Block {
  double end_s = 0;    // the block's end, seconds since the step's daemon started
  double seconds = 0;  // its length
  // Each rank at most once. A rank left out (not read, restarted, stopped,
  // gone) is no evidence either way in this block.
  std::vector<RankShare> ranks;
};

enum class Change { named, changed, recovered };
const char* change_name(Change c) noexcept;

struct Verdict {
  Change change = Change::named;
  std::vector<int> ranks;           // the stragglers (recovered: those that were), ascending
  std::vector<std::string> hosts;   // theirs, sorted, once each
  std::vector<int> others;          // the ranks that wait for them, ascending
  double lead = 0;                  // the others' median wait share minus theirs, over the window
  std::optional<double> cpu_ratio;  // their CPU per second over the others' median
  // What keeps them behind, where they wait on their own work more than the
  // others do (by half the threshold at least, the kind most above the
  // others'): "input", "file", "sleep" or "other", and their share of it.
  // "" and 0: they compute (cpu_ratio), or nothing is known.
  std::string own_on;
  double own = 0;
  std::string where;   // where the others wait, most often seen; "": unknown
  double since_s = 0;  // named/changed: when it began; recovered: when it was named
  double at_s = 0;     // the block that decided it
  // "rank 3 (n2) — ranks 0-2 wait for it 21 % of the time (in all_reduce at
  // train.py:122); it computes 1.27x the median; since 40 s", or, for a rank
  // behind its input, "...; it waits on its DataLoader 38 % of the time; ..."
  std::string line;
};

// One block's figures, for the report's history.
struct BlockFigures {
  double end_s = 0, seconds = 0;
  double median_waiting = 0;  // over the ranks judged
  int least_rank = -1;        // the rank that waited least (-1: none judged)
  double least_waiting = 0;
  std::vector<RankShare> ranks;  // as observed, the ranks judged
};

class Watch {
 public:
  explicit Watch(Settings s = {});
  // One block: a verdict when the straggler is named, changes or recovers.
  std::optional<Verdict> observe(const Block& b);
  // A rank of the latest block leads the others by half the threshold over
  // the window: a straggler may be coming (a caller may look closer, at
  // where the others wait).
  bool suspected() const;
  // The straggler named now (not recovered); none: none.
  const std::optional<Verdict>& named() const { return named_; }
  // Every verdict so far, oldest first (at most kMostVerdicts kept).
  const std::deque<Verdict>& verdicts() const { return verdicts_; }
  // The latest blocks' figures, oldest first (at most kHistory kept).
  const std::deque<BlockFigures>& history() const { return history_; }
  const Settings& settings() const { return s_; }
  static constexpr size_t kHistory = 720, kMostVerdicts = 64;

 private:
  struct Lead {
    int blocks = 0;      // of the window's blocks in which it was judged beside others
    double median = 0;   // of its leads
    int near = 0;        // blocks with a lead of at least half the threshold
    int over = 0;        // blocks with a lead of at least the threshold
    double since_s = 0;  // the start of its latest run of such blocks
  };
  Lead lead_of(int rank, const std::set<int>& apart = {}) const;
  std::vector<int> stragglers(size_t judged) const;
  Verdict describe(Change c, const std::vector<int>& ranks, double at_s) const;

  Settings s_;
  std::deque<Block> window_;  // the judged shares only
  std::optional<Verdict> named_;
  std::deque<Verdict> verdicts_;
  std::deque<BlockFigures> history_;
};

}  // namespace dp::straggler
