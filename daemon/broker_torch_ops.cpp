// PyTorch's store operations that the step's own key space has no use for
// (SPACE_TORCH): what the node agents need to answer unmodified TCPStore
// clients as PyTorch's server would. Keys and values are the clients' bytes.
#include <algorithm>
#include <array>

#include "broker.hpp"

namespace dp::daemon {

bool Broker::torch_only(const Call& c, const char* op) {
  if (c.space == proto::SPACE_TORCH) return true;
  reply_error(c.conn, c.id, proto::PROTOCOL,
              std::string(op) + " is an operation of PyTorch's store (key space SPACE_TORCH)");
  return false;
}

template <class Keys>
bool Broker::keys_fit(const Call& c, const Keys& keys) {
  for (const auto& k : keys) {
    if (auto ok = store_.check_key(k); !ok) {
      reply_error(c.conn, c.id, ok.error());
      return false;
    }
  }
  return true;
}

void Broker::op_append(const Call& c, const proto::Append& m) {
  if (!torch_only(c, "append") || !keys_fit(c, std::array{m.key()})) return;
  if (auto r = store_.append(c.space, m.key(), m.value()); !r)
    return reply_error(c.conn, c.id, r.error());
  key_changed(c.space, m.key(), c.now);
  reply_ok(c.conn, c.id);
}

void Broker::op_check(const Call& c, const proto::Check& m) {
  if (!torch_only(c, "check") || !keys_fit(c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_flag(std::all_of(m.keys().begin(), m.keys().end(),
                         [&](const std::string& k) { return store_.contains(c.space, k); }));
  out_.send(c.conn, r);
}

void Broker::op_num_keys(const Call& c) {
  if (!torch_only(c, "num_keys")) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.keys(c.space)));
  out_.send(c.conn, r);
}

void Broker::op_multi_get(const Call& c, const proto::MultiGet& m) {
  if (!torch_only(c, "multi_get") || !keys_fit(c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  for (const auto& k : m.keys()) {
    const std::string* v = store_.find(c.space, k);
    if (v == nullptr)
      return reply_error(c.conn, c.id, proto::NOT_FOUND, "key " + shown(k) + " does not exist");
    r.add_values(*v);
  }
  out_.send(c.conn, r);
}

// All or none: every key and value is checked against the limits first.
void Broker::op_multi_set(const Call& c, const proto::MultiSet& m) {
  if (!torch_only(c, "multi_set") || !keys_fit(c, m.keys())) return;
  if (m.keys_size() != m.values_size()) {
    return reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                       "multi_set: " + std::to_string(m.keys_size()) + " keys but " +
                           std::to_string(m.values_size()) + " values");
  }
  uint64_t total = 0;
  for (int i = 0; i < m.keys_size(); ++i) total += m.keys(i).size() + m.values(i).size();
  if (store_.bytes() + total > cfg_.limits.max_total_bytes) {
    return reply_error(c.conn, c.id, proto::LIMIT,
                       "multi_set of " + std::to_string(m.keys_size()) +
                           " keys would exceed the step's limit of " +
                           std::to_string(cfg_.limits.max_total_bytes) +
                           " stored bytes (dp-rendezvousd --max-total-bytes)");
  }
  for (int i = 0; i < m.keys_size(); ++i) {
    if (auto r = store_.put(c.space, m.keys(i), m.values(i)); !r)
      return reply_error(c.conn, c.id, r.error());
  }
  for (const auto& k : m.keys()) key_changed(c.space, k, c.now);
  reply_ok(c.conn, c.id);
}

void Broker::op_queue_push(const Call& c, const proto::QueuePush& m) {
  if (!torch_only(c, "queue_push") || !keys_fit(c, std::array{m.key()})) return;
  if (auto r = store_.push(m.key(), m.value()); !r) return reply_error(c.conn, c.id, r.error());
  key_changed(c.space, m.key(), c.now);
  reply_ok(c.conn, c.id);
}

// PyTorch's answer: the queue's length before the pop, and the item when
// there was one (an empty queue answers 0 and no value).
void Broker::op_queue_pop(const Call& c, const proto::QueuePop& m) {
  if (!torch_only(c, "queue_pop") || !keys_fit(c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.queue_length(m.key())));
  if (auto v = store_.pop(m.key())) r.set_value(std::move(*v));
  out_.send(c.conn, r);
}

void Broker::op_queue_len(const Call& c, const proto::QueueLen& m) {
  if (!torch_only(c, "queue_len") || !keys_fit(c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.queue_length(m.key())));
  out_.send(c.conn, r);
}

}  // namespace dp::daemon
