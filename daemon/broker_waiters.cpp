// Blocking calls (get, wait, barrier), their deadlines and the barriers.
#include <algorithm>

#include "broker.hpp"

namespace dp::daemon {
namespace {

template <class V, class T>
void erase_value(V& v, const T& x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

}  // namespace

bool Broker::room_for_call(const Call& c, const std::string* new_barrier) {
  const long long cap = cfg_.limits.max_pending_calls > 0
                            ? cfg_.limits.max_pending_calls
                            : 4ll * std::max(cfg_.world_size, 1) + 4096;
  if (static_cast<long long>(waiters_.size()) >= cap) {
    reply_error(c.conn, c.id, proto::LIMIT,
                "too many blocking calls pending in the step (limit " + std::to_string(cap) +
                    ", dp-rendezvousd --max-pending-calls); retry when some are answered");
    return false;
  }
  if (new_barrier && !barriers_.count(*new_barrier) &&
      static_cast<int>(barriers_.size()) >= cfg_.limits.max_open_barriers) {
    reply_error(c.conn, c.id, proto::LIMIT,
                "too many barriers open at once in the step (limit " +
                    std::to_string(cfg_.limits.max_open_barriers) +
                    ", dp-rendezvousd --max-open-barriers): are barrier names unique per call?");
    return false;
  }
  return true;
}

uint64_t Broker::add_waiter(const Call& c, WaitKind kind, std::vector<std::string> keys,
                            uint32_t timeout_ms) {
  const uint64_t wid = next_waiter_++;
  const Clock::time_point now = c.now;
  Waiter w;
  w.conn = c.conn;
  w.request_id = c.id;
  w.kind = kind;
  w.space = c.space;
  w.keys = std::move(keys);
  w.timeout = std::chrono::milliseconds(timeout_ms);
  w.since = now;
  if (w.timeout.count() > 0) {
    w.has_deadline = true;
    w.deadline = now + w.timeout;
    deadlines_.emplace(w.deadline, wid);
  }
  peers_[w.conn].waiters.push_back(wid);
  waiters_.emplace(wid, std::move(w));
  return wid;
}

// Removes every trace of a waiter; no reply.
void Broker::drop_waiter(uint64_t wid) {
  auto it = waiters_.find(wid);
  if (it == waiters_.end()) return;
  Waiter& w = it->second;
  if (w.has_deadline) {
    auto [lo, hi] = deadlines_.equal_range(w.deadline);
    for (auto d = lo; d != hi; ++d) {
      if (d->second == wid) {
        deadlines_.erase(d);
        break;
      }
    }
  }
  auto p = peers_.find(w.conn);
  if (p != peers_.end()) erase_value(p->second.waiters, wid);
  if (w.kind == WaitKind::barrier) {
    if (auto b = barriers_.find(w.keys.front()); b != barriers_.end()) {
      erase_value(b->second.waiters, wid);
      for (int r : w.ranks) {  // undo this call's arrivals
        if (!b->second.arrived[static_cast<size_t>(r)]) continue;
        b->second.arrived[static_cast<size_t>(r)] = 0;
        --b->second.count;
      }
      if (b->second.count == 0) barriers_.erase(b);
    }
  } else {
    auto& by_key = key_waiters(w.space);
    for (const auto& k : w.keys) {
      auto kw = by_key.find(k);
      if (kw == by_key.end()) continue;
      erase_value(kw->second, wid);
      if (kw->second.empty()) by_key.erase(kw);
    }
  }
  waiters_.erase(it);
}

void Broker::op_cancel_call(const Call& c, const proto::CancelCall& m) {
  for (uint64_t wid : c.peer.waiters) {
    auto it = waiters_.find(wid);
    if (it == waiters_.end() || it->second.request_id != m.request_id()) continue;
    if (it->second.kind == WaitKind::barrier) break;  // an arrival is not taken back
    if (it->second.space == proto::SPACE_TORCH) torch_note_unset(c.peer, it->second, c.now, true);
    drop_waiter(wid);
    break;
  }
  reply_ok(c.conn, c.id);
}

void Broker::finish_waiter(uint64_t wid, Clock::time_point now) {
  auto it = waiters_.find(wid);
  if (it == waiters_.end()) return;
  Waiter& w = it->second;
  proto::Response r;
  r.set_id(w.request_id);
  if (w.kind == WaitKind::get) {
    if (const KvStore::Entry* e = store_.entry(w.space, w.keys.front())) {
      r.set_value(e->value);
      r.set_flag(e->once);
    }
    auto p = peers_.find(w.conn);
    if (p != peers_.end() && w.space == proto::SPACE_STEP) mark_fetched(w.conn, p->second, now);
  }
  const ConnId conn = w.conn;
  // A completed barrier is already erased; do not undo its arrival.
  if (w.kind == WaitKind::barrier) w.kind = WaitKind::wait;
  drop_waiter(wid);
  out_.send(conn, r);
}

void Broker::fail_waiter(uint64_t wid, proto::Code code, std::string message) {
  auto it = waiters_.find(wid);
  if (it == waiters_.end()) return;
  const ConnId conn = it->second.conn;
  const uint64_t rid = it->second.request_id;
  drop_waiter(wid);
  reply_error(conn, rid, code, std::move(message));
}

void Broker::key_changed(proto::Space space, const std::string& key, Clock::time_point now) {
  auto& by_key = key_waiters(space);
  auto it = by_key.find(key);
  if (it == by_key.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  by_key.erase(it);
  for (uint64_t wid : ids) {
    auto w = waiters_.find(wid);
    if (w == waiters_.end()) continue;  // already answered, timed out or gone
    if (w->second.kind == WaitKind::get) {
      finish_waiter(wid, now);
      continue;
    }
    auto& keys = w->second.keys;
    keys.erase(std::remove_if(keys.begin(), keys.end(),
                              [&](const std::string& k) { return store_.contains(space, k); }),
               keys.end());
    if (keys.empty()) finish_waiter(wid, now);
  }
}

std::string Broker::missing_ranks(const BarrierState& b) const {
  std::string s;
  int shown_n = 0;
  for (int r = 0; r < cfg_.world_size && shown_n < 8; ++r) {
    if (!b.arrived.empty() && b.arrived[static_cast<size_t>(r)]) continue;
    s += (shown_n ? "," : "") + std::to_string(r);
    ++shown_n;
  }
  if (cfg_.world_size - b.count > shown_n) s += ",...";
  return s;
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
  if (auto b = barriers_.find(w.keys.front()); b != barriers_.end()) {
    msg += ": " + std::to_string(b->second.count) + " of " + std::to_string(cfg_.world_size) +
           " ranks arrived; missing ranks " + missing_ranks(b->second);
  }
  return msg;
}

void Broker::expire_waiters(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const uint64_t wid = deadlines_.begin()->second;
    auto it = waiters_.find(wid);
    if (it == waiters_.end()) {
      deadlines_.erase(deadlines_.begin());
      continue;
    }
    fail_waiter(wid, proto::TIMEOUT, timeout_message(it->second));
  }
}

}  // namespace dp::daemon
