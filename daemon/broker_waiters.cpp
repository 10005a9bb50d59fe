// Answering the blocking calls (get, wait, barrier): their replies, limits,
// cancels and timeouts. PendingCalls (pending_calls.hpp) keeps them.
#include "broker.hpp"

namespace dp::daemon {

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

void Broker::expire_waiters(Clock::time_point now) {
  while (auto wid = calls_.next_due(now))
    fail_waiter(*wid, proto::TIMEOUT, calls_.timeout_message(*calls_.find(*wid)));
}

}  // namespace dp::daemon
