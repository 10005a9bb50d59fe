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

// Rank 0 creates the ID (ncclGetUniqueId, whose bootstrap listener then
// lives in this process until every rank has joined) and publishes it under
// `key` (publish_once; store.set when empty); the other ranks block until it is there.
Result<ncclUniqueId> exchange_nccl_id(gloo::rendezvous::Store& store,
                                      const PublishOnce& publish_once, int rank,
                                      const std::string& key);

// NCCL 2.23+ (ncclCommInitRankScalable): `roots` IDs. The first rank of each
// of NCCL's segments (nccl_roots.hpp) creates one and publishes it under
// key/<i>; rank 0 reads them in order and publishes the list once under
// key/all, which every rank reads in one call (a node agent fetches it once
// for its node). roots == 1 is exchange_nccl_id's path, under `key`.
Result<std::vector<ncclUniqueId>> exchange_nccl_ids(gloo::rendezvous::Store& store,
                                                    const PublishOnce& publish_once, int rank,
                                                    int world, int roots, const std::string& key);

}  // namespace dp::detail
