// NCCL pieces that work without a GPU, so they are tested here: error
// mapping and the unique-ID exchange through the job's store. Only built
// with CUDA (DP_HAVE_CUDA).
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "dp/result.hpp"
#include "nccl_module.hpp"

namespace dp::detail {

// One line: what failed, NCCL's reason, and what to do.
Error nccl_error(ncclResult_t r, const std::string& what);

// The unique IDs every rank starts NCCL from, the same list in the same
// order: one (rank 0's) or, with NCCL 2.23+ (ncclCommInitRankScalable),
// `roots`. The first rank of each of NCCL's segments (nccl_roots.hpp)
// creates one (ncclGetUniqueId, whose bootstrap listener then lives in this
// process until every rank has joined); the others publish theirs under
// key/<i>, rank 0 reads them in order and publishes the list once under
// key/all (publish_once, so each node's agent fetches it once; store.set
// when empty), and every other rank blocks until it reads it.
Result<std::vector<ncclUniqueId>> exchange_nccl_ids(gloo::rendezvous::Store& store,
                                                    const PublishOnce& publish_once, int rank,
                                                    int world, int roots, const std::string& key);

}  // namespace dp::detail
