// PyTorch's store operations that the step's own key space has no use for
// (APPEND, CHECK, GETNUMKEYS, MULTI_GET, MULTI_SET, QUEUE_PUSH, QUEUE_POP,
// QUEUE_LEN): what the node agents need to answer unmodified TCPStore clients
// as PyTorch's server would. Functions of the store alone, with no
// connection, peer or waiter: the broker routes a request here, sends the
// answer and wakes the waiters on the keys it changed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "kv_store.hpp"
#include "store_ops.hpp"

namespace dp::daemon {

// nullopt: `req` is none of them (the step's own operations, some shared
// with PyTorch's key space: SET, GET, ADD, WAIT, ...). One of them outside
// SPACE_TORCH is refused (PROTOCOL); every key is checked against the
// store's limits first, and MULTI_SET stores all of its keys or none.
std::optional<StoreOpDone> torch_store_op(KvStore& store, const proto::Request& req);

}  // namespace dp::daemon
