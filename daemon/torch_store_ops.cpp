#include "torch_store_ops.hpp"

#include <algorithm>
#include <array>

#include "broker_limits.hpp"
#include "dp/shown_value.hpp"
#include "frame_codec.hpp"

namespace dp::daemon {
namespace {

using Done = StoreOpDone;

// Every key's size; else the refusal.
template <class Keys>
std::optional<Done> misfit(const KvStore& store, uint64_t id, const Keys& keys) {
  for (const auto& k : keys)
    if (auto ok = store.check_key(k); !ok) return store_refusal(id, ok.error());
  return std::nullopt;
}

// A write of one key (APPEND, QUEUE_PUSH): an empty answer and the key changed.
Done wrote(uint64_t id, const std::string& key, const Result<void>& r) {
  if (!r) return store_refusal(id, r.error());
  Done d = store_answer(id);
  d.changed.push_back(key);
  return d;
}

Done check(const KvStore& store, uint64_t id, proto::Space space, const proto::Check& m) {
  if (auto bad = misfit(store, id, m.keys())) return *bad;
  Done d = store_answer(id);
  d.reply.set_flag(std::all_of(m.keys().begin(), m.keys().end(),
                               [&](const std::string& k) { return store.contains(space, k); }));
  return d;
}

Done multi_get(const KvStore& store, uint64_t id, proto::Space space, const proto::MultiGet& m) {
  if (auto bad = misfit(store, id, m.keys())) return *bad;
  Done d = store_answer(id);
  for (const auto& k : m.keys()) {
    const std::string* v = store.find(space, k);
    if (v == nullptr)
      return store_refusal(id, proto::NOT_FOUND, "key " + shown_key(k) + " does not exist");
    d.reply.add_values(*v);
  }
  return d;
}

// All or none: every key and value is checked against the limits first.
Done multi_set(KvStore& store, uint64_t id, proto::Space space, const proto::MultiSet& m) {
  if (auto bad = misfit(store, id, m.keys())) return *bad;
  if (m.keys_size() != m.values_size())
    return store_refusal(id, proto::INVALID_ARGUMENT,
                         "multi_set: " + std::to_string(m.keys_size()) + " keys but " +
                             std::to_string(m.values_size()) + " values");
  uint64_t total = 0;
  for (int i = 0; i < m.keys_size(); ++i) total += m.keys(i).size() + m.values(i).size();
  const uint64_t limit = store.limits().max_total_bytes;
  if (store.bytes() + total > limit)
    return store_refusal(id, proto::LIMIT,
                         "multi_set of " + std::to_string(m.keys_size()) +
                             " keys would exceed the step's limit of " + std::to_string(limit) +
                             " stored bytes (dp-rendezvousd --max-total-bytes)");
  for (int i = 0; i < m.keys_size(); ++i)
    if (auto r = store.put(space, m.keys(i), m.values(i)); !r) return store_refusal(id, r.error());
  Done d = store_answer(id);
  d.changed.assign(m.keys().begin(), m.keys().end());
  return d;
}

// PyTorch's answer: the queue's length before the pop, and the item when
// there was one (an empty queue answers 0 and no value).
Done queue_pop(KvStore& store, uint64_t id, const proto::QueuePop& m) {
  if (auto bad = misfit(store, id, std::array{m.key()})) return *bad;
  Done d = store_answer(id);
  d.reply.set_number(static_cast<int64_t>(store.queue_length(m.key())));
  if (auto v = store.pop(m.key())) d.reply.set_value(std::move(*v));
  return d;
}

Done queue_len(const KvStore& store, uint64_t id, const proto::QueueLen& m) {
  if (auto bad = misfit(store, id, std::array{m.key()})) return *bad;
  Done d = store_answer(id);
  d.reply.set_number(static_cast<int64_t>(store.queue_length(m.key())));
  return d;
}

// PyTorch's operations are served in its key space only.
std::optional<Done> outside_torch_space(const proto::Request& req, const char* op) {
  if (req.space() == proto::SPACE_TORCH) return std::nullopt;
  return store_refusal(req.id(), proto::PROTOCOL,
                       std::string(op) + " is one of PyTorch's store (key space SPACE_TORCH)");
}

// The operation's name, or nullptr for the step's own: every operation is
// named here (-Wswitch-enum), so one added to the protocol is routed on
// purpose, never by where its field number falls.
const char* torch_op_name(proto::Request::OpCase op) {
  using R = proto::Request;
  switch (op) {
    case R::kAppend: return "APPEND";
    case R::kCheck: return "CHECK";
    case R::kNumKeys: return "GETNUMKEYS";
    case R::kMultiGet: return "MULTI_GET";
    case R::kMultiSet: return "MULTI_SET";
    case R::kQueuePush: return "QUEUE_PUSH";
    case R::kQueuePop: return "QUEUE_POP";
    case R::kQueueLen: return "QUEUE_LEN";
    case R::kHello:
    case R::kSet:
    case R::kGet:
    case R::kAdd:
    case R::kCompareAndSet:
    case R::kErase:
    case R::kExists:
    case R::kWait:
    case R::kBarrier:
    case R::kAbort:
    case R::kHeartbeat:
    case R::kStats:
    case R::kGoodbye:
    case R::kRankLost:
    case R::kStepSignal:
    case R::kCancelCall:
    case R::kStoreRefused:
    case R::kStacks:
    case R::kStacksAnswer:
    case R::kPublishPorts:
    case R::kRestartReady:
    case R::OP_NOT_SET: return nullptr;
  }
  return nullptr;
}

}  // namespace

std::optional<StoreOpDone> torch_store_op(KvStore& store, const proto::Request& req) {
  const char* name = torch_op_name(req.op_case());
  if (name == nullptr) return std::nullopt;
  if (auto bad = outside_torch_space(req, name)) return bad;
  const uint64_t id = req.id();
  const proto::Space space = req.space();
  if (req.has_append()) {
    const auto& m = req.append();
    if (auto bad = misfit(store, id, std::array{m.key()})) return bad;
    return wrote(id, m.key(), store.append(space, m.key(), m.value()));
  }
  if (req.has_queue_push()) {
    const auto& m = req.queue_push();
    if (auto bad = misfit(store, id, std::array{m.key()})) return bad;
    return wrote(id, m.key(), store.push(m.key(), m.value()));
  }
  if (req.has_check()) return check(store, id, space, req.check());
  if (req.has_multi_get()) return multi_get(store, id, space, req.multi_get());
  if (req.has_multi_set()) return multi_set(store, id, space, req.multi_set());
  if (req.has_queue_pop()) return queue_pop(store, id, req.queue_pop());
  if (req.has_queue_len()) return queue_len(store, id, req.queue_len());
  Done d = store_answer(id);  // GETNUMKEYS
  d.reply.set_number(static_cast<int64_t>(store.keys(space)));
  return d;
}

}  // namespace dp::daemon
