// NCCL pieces that work without a GPU, so they are tested here: error
// mapping and the unique-ID exchange through the job's store. Only built
// with CUDA (DP_HAVE_CUDA).
#pragma once

#include <nccl.h>

#include <string>

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

}  // namespace dp::detail
