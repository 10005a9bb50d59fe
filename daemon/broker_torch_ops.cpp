// PyTorch's store operations that the step's own key space has no use for
// (SPACE_TORCH): what the node agents need to answer unmodified TCPStore
// clients as PyTorch's server would, kept apart from the step's own operations.
#include "broker.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "dp/duration_text.hpp"
#include "dp/shown_value.hpp"

namespace dp::daemon {

// PyTorch's operations are served in its key space only.
bool Broker::in_torch_space(const Call& c, const char* op) {
  if (c.space == proto::SPACE_TORCH) return true;
  reply_error(c.conn, c.id, proto::PROTOCOL,
              std::string(op) + " is one of PyTorch's store (key space SPACE_TORCH)");
  return false;
}

// Every operation is named here (-Wswitch-enum): one added to the protocol
// is routed on purpose, never by where its field number falls.
bool Broker::torch_op(const Call& c, const proto::Request& req) {
  using R = proto::Request;
  switch (req.op_case()) {
    case R::kAppend:
      if (in_torch_space(c, "APPEND")) torch_append(c, req.append());
      return true;
    case R::kCheck:
      if (in_torch_space(c, "CHECK")) torch_check(c, req.check());
      return true;
    case R::kNumKeys:
      if (in_torch_space(c, "GETNUMKEYS")) torch_num_keys(c);
      return true;
    case R::kMultiGet:
      if (in_torch_space(c, "MULTI_GET")) torch_multi_get(c, req.multi_get());
      return true;
    case R::kMultiSet:
      if (in_torch_space(c, "MULTI_SET")) torch_multi_set(c, req.multi_set());
      return true;
    case R::kQueuePush:
      if (in_torch_space(c, "QUEUE_PUSH")) torch_queue_push(c, req.queue_push());
      return true;
    case R::kQueuePop:
      if (in_torch_space(c, "QUEUE_POP")) torch_queue_pop(c, req.queue_pop());
      return true;
    case R::kQueueLen:
      if (in_torch_space(c, "QUEUE_LEN")) torch_queue_len(c, req.queue_len());
      return true;
    // The step's own operations, some shared with PyTorch's key space
    // (SET, GET, ADD, ...), and the session's: Broker::handle_request.
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
    case R::OP_NOT_SET: return false;
  }
  return false;
}

void Broker::torch_note_unset(const Peer& p, const Waiter& w, Clock::time_point now,
                              bool given_up) {
  std::vector<std::string> missing;
  for (const auto& k : w.keys)
    if (!store_.contains(w.space, k)) missing.push_back(k);
  if (missing.empty()) return;
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 3; ++i)
    keys += (i ? ", " : "") + shown_key(missing[i]);
  if (missing.size() > 3) keys += " and " + std::to_string(missing.size() - 3) + " more";
  const std::string who =
      p.role == proto::ROLE_NODE
          ? "the clients on host " + p.host + " (ranks " + rank_list(p.node_ranks) + ")"
          : describe_peer(p);
  const std::string waited = seconds_text(now - w.since, 1);
  const std::string why =
      abort_ ? abort_->message
             : "no rank of the step has failed: the one that sets it has not got there "
               "(its output says where it is)";
  std::string line = "PyTorch's store: " + who + " " +
                     (given_up ? "stopped waiting after " + waited : "waiting " + waited) +
                     " for " + keys + ", never set; " + why;
  // Once per key, kept for the report; printed (srun --dp-verbose shows it)
  // once the step failed, those before then with the failure (abort_job).
  if (report_.note_unset_wait(missing.front(), line) && abort_) torch_log(line);
}

void Broker::torch_refused(const Call& c, const proto::StoreRefused& m) {
  if (c.peer.role != proto::ROLE_NODE) {
    if (c.id != 0)
      reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                  "store_refused: only a node agent serves a PyTorch store");
    return;
  }
  uint64_t& count = store_refused_[c.peer.host];
  count = std::max(count, m.refused());  // a count so far: one sent again changes nothing
  if (m.line().empty()) return;
  const std::string line =
      "PyTorch's store on host " + c.peer.host + ": " + shown_value(m.line(), 1024);
  if (report_.note_store_refusal(line)) torch_log(line);
}

void Broker::torch_log(const std::string& line) const {
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg_.job_id.c_str(),
               cfg_.step_id.c_str(), line.c_str());
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

void Broker::torch_append(const Call& c, const proto::Append& m) {
  if (!keys_fit(c, std::array{m.key()})) return;
  if (auto r = store_.append(c.space, m.key(), m.value()); !r)
    return reply_error(c.conn, c.id, r.error());
  key_changed(c.space, m.key(), c.now);
  reply_ok(c.conn, c.id);
}

void Broker::torch_check(const Call& c, const proto::Check& m) {
  if (!keys_fit(c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_flag(std::all_of(m.keys().begin(), m.keys().end(),
                         [&](const std::string& k) { return store_.contains(c.space, k); }));
  out_.send(c.conn, r);
}

void Broker::torch_num_keys(const Call& c) {
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.keys(c.space)));
  out_.send(c.conn, r);
}

void Broker::torch_multi_get(const Call& c, const proto::MultiGet& m) {
  if (!keys_fit(c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  for (const auto& k : m.keys()) {
    const std::string* v = store_.find(c.space, k);
    if (v == nullptr)
      return reply_error(c.conn, c.id, proto::NOT_FOUND, "key " + shown_key(k) + " does not exist");
    r.add_values(*v);
  }
  out_.send(c.conn, r);
}

// All or none: every key and value is checked against the limits first.
void Broker::torch_multi_set(const Call& c, const proto::MultiSet& m) {
  if (!keys_fit(c, m.keys())) return;
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

void Broker::torch_queue_push(const Call& c, const proto::QueuePush& m) {
  if (!keys_fit(c, std::array{m.key()})) return;
  if (auto r = store_.push(m.key(), m.value()); !r) return reply_error(c.conn, c.id, r.error());
  key_changed(c.space, m.key(), c.now);
  reply_ok(c.conn, c.id);
}

// PyTorch's answer: the queue's length before the pop, and the item when
// there was one (an empty queue answers 0 and no value).
void Broker::torch_queue_pop(const Call& c, const proto::QueuePop& m) {
  if (!keys_fit(c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.queue_length(m.key())));
  if (auto v = store_.pop(m.key())) r.set_value(std::move(*v));
  out_.send(c.conn, r);
}

void Broker::torch_queue_len(const Call& c, const proto::QueueLen& m) {
  if (!keys_fit(c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(store_.queue_length(m.key())));
  out_.send(c.conn, r);
}

}  // namespace dp::daemon
