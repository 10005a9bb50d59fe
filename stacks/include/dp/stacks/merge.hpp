// The merged view of a step: ranks' stacks in, groups of ranks whose stacks
// are identical out, the smallest groups first (the odd ones out lead), each
// printed as one line and its indented details. Pure: the daemon merges what
// the node agents read, tests replay recorded stacks.
//
// What makes two ranks "identical" (a rank's identity):
// - A Python rank: its main thread's frames (function, file, line), then the
//   frames of its other threads that have Python frames, as a sorted set with
//   counts. Threads without Python frames (gloo's, OpenMP's, CUDA's) are not
//   part of it: every rank has its own number of them, in any state.
// - A rank without Python frames: the reason, and each thread's kernel state
//   (state, syscall, wait channel; not its CPU time), main thread first,
//   identical states counted.
// Lines: `rank 3 (n2, pid 4242): main hang.py:21 <- <module> hang.py:30`,
// `ranks 0-2: all_reduce distributed_c10d.py:2501 <- step hang.py:24 <- ...`:
// innermost frame first, each `qualified_name file_name:line` (the file's
// last path component; `?` for a line the process did not say), ` <- ...`
// where the chain was cut.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dp/rank_ranges.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// How much of a rank's own text (its names, its paths) a line of ours shows,
// escaped (dp/shown_value.hpp): a name, and a whole line.
inline constexpr size_t kShownNameBytes = 256;
inline constexpr size_t kShownLineBytes = 4096;

struct RankStacks {
  int rank = -1;
  std::string host;
  ProcessStacks stacks;
};

struct StackGroup {
  std::vector<int> ranks;          // ascending
  std::string host;                // the first rank's, for a group of one
  int pid = 0;                     // likewise
  std::vector<std::string> lines;  // the identity: its first line, then the details
};

std::vector<StackGroup> merge_stacks(const std::vector<RankStacks>& ranks);

// The view: each group's first line with its ranks in front, its details
// indented below.
std::vector<std::string> format_groups(const std::vector<StackGroup>& groups);

// "0-2,5,7-9" from ascending ranks (core's, one spelling for every verdict).
using dp::rank_ranges;

// "a.py:1": the frame's file's last path component (shown escaped) and its
// line ("?": unknown).
std::string frame_place(const Frame& f);

// "f a.py:1 <- g b.py:2", innermost first.
std::string frames_text(const std::vector<Frame>& frames, bool truncated);

}  // namespace dp::stacks
