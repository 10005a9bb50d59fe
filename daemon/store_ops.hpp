// The store's operations that need nothing but the store, in either key
// space with that space's rules: ADD (the step's keys hold strict decimal
// integers and refuse an overflow; PyTorch's are read as std::stoll reads
// them and wrap), ERASE (PyTorch's DELETE_KEY answers how many keys it
// removed), EXISTS. PyTorch's own operations: torch_store_ops.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "kv_store.hpp"

namespace dp::daemon {

// One operation done: its answer (the request's id; an error's code and
// message) and the keys whose values it changed (their waiters are due).
struct StoreOpDone {
  proto::Response reply;
  std::vector<std::string> changed;
};

// An empty answer to request `id`, and a refusal of it.
StoreOpDone store_answer(uint64_t id);
StoreOpDone store_refusal(uint64_t id, proto::Code code, std::string message);
StoreOpDone store_refusal(uint64_t id, const Error& e);

// nullopt: `req` is none of ADD, ERASE, EXISTS.
std::optional<StoreOpDone> store_op(KvStore& store, const proto::Request& req);

}  // namespace dp::daemon
