#include "broker_torch_ops.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "dp/shown_value.hpp"

namespace dp::daemon {

// PyTorch's operations are served in its key space only.
bool TorchOps::in_torch_space(Broker& b, const Call& c, const char* op) {
  if (c.space == proto::SPACE_TORCH) return true;
  b.reply_error(c.conn, c.id, proto::PROTOCOL,
                std::string(op) + " is one of PyTorch's store (key space SPACE_TORCH)");
  return false;
}

// Every operation is named here (-Wswitch-enum): one added to the protocol
// is routed on purpose, never by where its field number falls.
bool TorchOps::handle(Broker& b, const Call& c, const proto::Request& req) {
  using R = proto::Request;
  switch (req.op_case()) {
    case R::kAppend:
      if (in_torch_space(b, c, "APPEND")) append(b, c, req.append());
      return true;
    case R::kCheck:
      if (in_torch_space(b, c, "CHECK")) check(b, c, req.check());
      return true;
    case R::kNumKeys:
      if (in_torch_space(b, c, "GETNUMKEYS")) num_keys(b, c);
      return true;
    case R::kMultiGet:
      if (in_torch_space(b, c, "MULTI_GET")) multi_get(b, c, req.multi_get());
      return true;
    case R::kMultiSet:
      if (in_torch_space(b, c, "MULTI_SET")) multi_set(b, c, req.multi_set());
      return true;
    case R::kQueuePush:
      if (in_torch_space(b, c, "QUEUE_PUSH")) queue_push(b, c, req.queue_push());
      return true;
    case R::kQueuePop:
      if (in_torch_space(b, c, "QUEUE_POP")) queue_pop(b, c, req.queue_pop());
      return true;
    case R::kQueueLen:
      if (in_torch_space(b, c, "QUEUE_LEN")) queue_len(b, c, req.queue_len());
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
    case R::OP_NOT_SET: return false;
  }
  return false;
}

void TorchOps::note_unset(Broker& b, const Broker::Peer& p, const Broker::Waiter& w,
                          Clock::time_point now, bool given_up) {
  std::vector<std::string> missing;
  for (const auto& k : w.keys)
    if (!b.store_.contains(w.space, k)) missing.push_back(k);
  if (missing.empty()) return;
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 3; ++i)
    keys += (i ? ", " : "") + shown_key(missing[i]);
  if (missing.size() > 3) keys += " and " + std::to_string(missing.size() - 3) + " more";
  const std::string who =
      p.role == proto::ROLE_NODE
          ? "the clients on host " + p.host + " (ranks " + rank_list(p.node_ranks) + ")"
          : b.describe_peer(p);
  const std::string waited = seconds_text(now - w.since);
  const std::string why =
      b.abort_ ? b.abort_->message
               : "no rank of the step has failed: the one that sets it has not got there "
                 "(its output says where it is)";
  std::string line = "PyTorch's store: " + who + " " +
                     (given_up ? "stopped waiting after " + waited : "waiting " + waited) +
                     " for " + keys + ", never set; " + why;
  // Once per key, kept for the report; printed (srun --dp-verbose shows it)
  // once the step failed, those before then with the failure (abort_job).
  if (b.report_.note_unset_wait(missing.front(), line) && b.abort_) log(b, line);
}

void TorchOps::refused(Broker& b, const Call& c, const proto::StoreRefused& m) {
  if (c.peer.role != proto::ROLE_NODE) {
    if (c.id != 0)
      b.reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                    "store_refused: only a node agent serves a PyTorch store");
    return;
  }
  uint64_t& count = b.store_refused_[c.peer.host];
  count = std::max(count, m.refused());  // a count so far: one sent again changes nothing
  if (m.line().empty()) return;
  const std::string line =
      "PyTorch's store on host " + c.peer.host + ": " + shown_value(m.line(), 1024);
  if (b.report_.note_store_refusal(line)) log(b, line);
}

void TorchOps::log(const Broker& b, const std::string& line) {
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", b.cfg_.job_id.c_str(),
               b.cfg_.step_id.c_str(), line.c_str());
}

template <class Keys>
bool TorchOps::keys_fit(Broker& b, const Call& c, const Keys& keys) {
  for (const auto& k : keys) {
    if (auto ok = b.store_.check_key(k); !ok) {
      b.reply_error(c.conn, c.id, ok.error());
      return false;
    }
  }
  return true;
}

void TorchOps::append(Broker& b, const Call& c, const proto::Append& m) {
  if (!keys_fit(b, c, std::array{m.key()})) return;
  if (auto r = b.store_.append(c.space, m.key(), m.value()); !r)
    return b.reply_error(c.conn, c.id, r.error());
  b.key_changed(c.space, m.key(), c.now);
  b.reply_ok(c.conn, c.id);
}

void TorchOps::check(Broker& b, const Call& c, const proto::Check& m) {
  if (!keys_fit(b, c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_flag(std::all_of(m.keys().begin(), m.keys().end(),
                         [&](const std::string& k) { return b.store_.contains(c.space, k); }));
  b.out_.send(c.conn, r);
}

void TorchOps::num_keys(Broker& b, const Call& c) {
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(b.store_.keys(c.space)));
  b.out_.send(c.conn, r);
}

void TorchOps::multi_get(Broker& b, const Call& c, const proto::MultiGet& m) {
  if (!keys_fit(b, c, m.keys())) return;
  proto::Response r;
  r.set_id(c.id);
  for (const auto& k : m.keys()) {
    const std::string* v = b.store_.find(c.space, k);
    if (v == nullptr)
      return b.reply_error(c.conn, c.id, proto::NOT_FOUND,
                           "key " + shown_key(k) + " does not exist");
    r.add_values(*v);
  }
  b.out_.send(c.conn, r);
}

// All or none: every key and value is checked against the limits first.
void TorchOps::multi_set(Broker& b, const Call& c, const proto::MultiSet& m) {
  if (!keys_fit(b, c, m.keys())) return;
  if (m.keys_size() != m.values_size()) {
    return b.reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                         "multi_set: " + std::to_string(m.keys_size()) + " keys but " +
                             std::to_string(m.values_size()) + " values");
  }
  uint64_t total = 0;
  for (int i = 0; i < m.keys_size(); ++i) total += m.keys(i).size() + m.values(i).size();
  if (b.store_.bytes() + total > b.cfg_.limits.max_total_bytes) {
    return b.reply_error(c.conn, c.id, proto::LIMIT,
                         "multi_set of " + std::to_string(m.keys_size()) +
                             " keys would exceed the step's limit of " +
                             std::to_string(b.cfg_.limits.max_total_bytes) +
                             " stored bytes (dp-rendezvousd --max-total-bytes)");
  }
  for (int i = 0; i < m.keys_size(); ++i) {
    if (auto r = b.store_.put(c.space, m.keys(i), m.values(i)); !r)
      return b.reply_error(c.conn, c.id, r.error());
  }
  for (const auto& k : m.keys()) b.key_changed(c.space, k, c.now);
  b.reply_ok(c.conn, c.id);
}

void TorchOps::queue_push(Broker& b, const Call& c, const proto::QueuePush& m) {
  if (!keys_fit(b, c, std::array{m.key()})) return;
  if (auto r = b.store_.push(m.key(), m.value()); !r) return b.reply_error(c.conn, c.id, r.error());
  b.key_changed(c.space, m.key(), c.now);
  b.reply_ok(c.conn, c.id);
}

// PyTorch's answer: the queue's length before the pop, and the item when
// there was one (an empty queue answers 0 and no value).
void TorchOps::queue_pop(Broker& b, const Call& c, const proto::QueuePop& m) {
  if (!keys_fit(b, c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(b.store_.queue_length(m.key())));
  if (auto v = b.store_.pop(m.key())) r.set_value(std::move(*v));
  b.out_.send(c.conn, r);
}

void TorchOps::queue_len(Broker& b, const Call& c, const proto::QueueLen& m) {
  if (!keys_fit(b, c, std::array{m.key()})) return;
  proto::Response r;
  r.set_id(c.id);
  r.set_number(static_cast<int64_t>(b.store_.queue_length(m.key())));
  b.out_.send(c.conn, r);
}

}  // namespace dp::daemon
