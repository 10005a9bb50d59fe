// A node's ranks' stacks on the wire: what a node agent reads
// (dp::stacks::ProcessStacks) as a StacksAnswer, and back as the daemon's
// dp::stacks::RankStacks to merge. Kept apart from dp_proto so that the
// plugin, which links dp_proto, never links the reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/stacks/merge.hpp"
#include "dp/stacks/stacks.hpp"
#include "stacks_ask.hpp"

namespace dp::rdv {

// What one node's answer may carry: well inside a node agent's frame
// (the daemon's request limit, 16 MiB) whatever the node's ranks hold.
struct StackCaps {
  size_t frames_per_thread = 64;   // deeper: cut, the thread marked truncated
  size_t threads_per_rank = 128;   // more: cut, the rank marked threads_cut
  size_t text_bytes = 256;         // of a function, file, wchan or name: cut with "..."
  size_t answer_bytes = 8u << 20;  // the whole answer: frames per thread halved until it fits
};

// A rank's text cut to at most `most` bytes, marked "..." when cut: one rule
// for every text a node's answer carries (stacks and flight recorders).
std::string capped_text(const std::string& s, size_t most);

using NodeStacks = std::vector<std::pair<int, stacks::ProcessStacks>>;  // (rank, stacks)

proto::RankStacks rank_message(int rank, const stacks::ProcessStacks& p, const StackCaps& caps);
// The node's answer; never over caps.answer_bytes (at worst each rank's
// kernel threads without frames).
proto::StacksAnswer stacks_answer(uint64_t ask, const NodeStacks& ranks, StackCaps caps);
// Back into the reader's values; host: the node that sent it (the daemon
// knows it from the node's hello). An unknown reason name reads as
// `inconsistent` with the name in its detail.
stacks::RankStacks rank_stacks(const proto::RankStacks& m, const std::string& host);

}  // namespace dp::rdv
