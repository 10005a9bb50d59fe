// NCCL's start-up from several roots (ncclCommInitRankScalable, NCCL 2.23+):
// one unique ID per `ranks per root` ranks, so no single bootstrap root
// answers every rank of a large world. Pure and header-only: libdp's NCCL
// module links nothing of the core.
#pragma once

namespace dp {

// How many unique IDs a world of `world` ranks starts from (at least one);
// ranks_per_root is DP_NCCL_RANKS_PER_ROOT (params.hpp).
constexpr int nccl_root_count(int world, int ranks_per_root) {
  if (world <= 0 || ranks_per_root <= 0) return 1;
  return (world + ranks_per_root - 1) / ranks_per_root;
}

// The index of the ID that `rank` creates, or -1. NCCL splits the ranks into
// `roots` contiguous segments, the first world % roots of them one rank
// longer; the first rank of each segment creates that segment's ID, so each
// bootstrap root runs in a process of the ranks it serves.
constexpr int nccl_root_index(int rank, int world, int roots) {
  if (roots <= 1 || roots > world) return rank == 0 ? 0 : -1;
  const int per = world / roots, longer = world % roots, split = longer * (per + 1);
  if (rank < split) return rank % (per + 1) == 0 ? rank / (per + 1) : -1;
  return (rank - split) % per == 0 ? longer + (rank - split) / per : -1;
}

}  // namespace dp
