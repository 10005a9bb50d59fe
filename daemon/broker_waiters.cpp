// Answering the blocking calls (get, wait, barrier): their replies, limits,
// cancels and timeouts. PendingCalls (pending_calls.hpp) keeps them.
#include "broker.hpp"

namespace dp::daemon {

bool Broker::room_for_call(const Call& c, const std::string* new_barrier) {
  const long long cap = cfg_.limits.max_pending_calls > 0
                            ? cfg_.limits.max_pending_calls
                            : 4ll * std::max(cfg_.world_size, 1) + 4096;
  if (static_cast<long long>(calls_.size()) >= cap) {
    reply_error(c.conn, c.id, proto::LIMIT,
                "too many blocking calls pending in the step (limit " + std::to_string(cap) +
                    ", dp-rendezvousd --max-pending-calls); retry when some are answered");
    return false;
  }
  if (new_barrier && !calls_.has_barrier(*new_barrier) &&
      static_cast<int>(calls_.open_barriers()) >= cfg_.limits.max_open_barriers) {
    reply_error(c.conn, c.id, proto::LIMIT,
                "too many barriers open at once in the step (limit " +
                    std::to_string(cfg_.limits.max_open_barriers) +
                    ", dp-rendezvousd --max-open-barriers): are barrier names unique per call?");
    return false;
  }
  return true;
}

void Broker::add_waiter(const Call& c, WaitKind kind, std::vector<std::string> keys,
                        uint32_t timeout_ms) {
  Waiter w;
  w.conn = c.conn;
  w.request_id = c.id;
  w.kind = kind;
  w.space = c.space;
  w.keys = std::move(keys);
  w.timeout = std::chrono::milliseconds(timeout_ms);
  w.since = c.now;
  calls_.add(std::move(w));
}

void Broker::op_cancel_call(const Call& c, const proto::CancelCall& m) {
  for (uint64_t wid : calls_.of_conn(c.conn)) {
    const Waiter* w = calls_.find(wid);
    if (!w || w->request_id != m.request_id()) continue;
    if (w->kind == WaitKind::barrier) break;  // an arrival is not taken back
    if (w->space == proto::SPACE_TORCH) torch_note_unset(c.peer, *w, c.now, true);
    calls_.take(wid);
    break;
  }
  reply_ok(c.conn, c.id);
}

void Broker::finish_waiter(uint64_t wid, Clock::time_point now) {
  const std::optional<Waiter> w = calls_.take(wid);
  if (!w) return;
  proto::Response r;
  r.set_id(w->request_id);
  if (w->kind == WaitKind::get) {
    if (const KvStore::Entry* e = store_.entry(w->space, w->keys.front())) {
      r.set_value(e->value);
      r.set_flag(e->once);
    }
    auto p = peers_.find(w->conn);
    if (p != peers_.end() && w->space == proto::SPACE_STEP) mark_fetched(w->conn, p->second, now);
  }
  out_.send(w->conn, r);
}

void Broker::fail_waiter(uint64_t wid, proto::Code code, std::string message) {
  const std::optional<Waiter> w = calls_.take(wid);
  if (w) reply_error(w->conn, w->request_id, code, std::move(message));
}

void Broker::key_changed(proto::Space space, const std::string& key, Clock::time_point now) {
  const auto done =
      calls_.key_set(space, key, [&](const std::string& k) { return store_.contains(space, k); });
  for (uint64_t wid : done) finish_waiter(wid, now);
}

std::string Broker::timeout_message(const Waiter& w) const {
  switch (w.kind) {
    case WaitKind::get:
      return "get " + shown_key(w.keys.front()) + " timed out after " + ms_text(w.timeout) +
             ": no peer set the key; check that the publishing rank is running";
    case WaitKind::wait:
      return "wait timed out after " + ms_text(w.timeout) + ": " + std::to_string(w.keys.size()) +
             " key(s) still missing, first " + shown_key(w.keys.front());
    case WaitKind::barrier: break;
  }
  std::string msg =
      "barrier " + shown_key(w.keys.front()) + " timed out after " + ms_text(w.timeout);
  if (auto progress = calls_.barrier_progress(w.keys.front())) msg += ": " + *progress;
  return msg;
}

void Broker::expire_waiters(Clock::time_point now) {
  while (auto wid = calls_.next_due(now))
    fail_waiter(*wid, proto::TIMEOUT, timeout_message(*calls_.find(*wid)));
}

}  // namespace dp::daemon
