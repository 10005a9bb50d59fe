#include "broker.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "frame_codec.hpp"

namespace dp::daemon {
namespace {

std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

// Peer-supplied text goes into logs and other peers' errors: printable ASCII only.
std::string printable(std::string_view text, size_t limit) {
  std::string s;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  return s;
}

// Keys are bytes: show them printable and short in messages.
std::string shown(std::string_view key) {
  return "'" + printable(key, 64) + (key.size() > 64 ? "...'" : "'");
}

constexpr uint32_t kHelloFrameLimit = 4096;  // before authentication, frames stay tiny

}  // namespace

bool secrets_equal(std::string_view a, std::string_view b) noexcept {
  // Always walk the longer length so the time reveals neither content nor prefix.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

Broker::Broker(BrokerConfig cfg, Outbox& out, Clock::time_point now)
    : cfg_(std::move(cfg)),
      out_(out),
      phases_(now, "job " + cfg_.job_id + " step " + cfg_.step_id),
      report_(now, cfg_.job_id, cfg_.step_id, cfg_.world_size, cfg_.limits.hang_timeout),
      rank_conn_(cfg_.world_size, 0),
      rank_hello_(cfg_.world_size, 0),
      rank_fetched_(cfg_.world_size, 0),
      rank_goodbye_(cfg_.world_size, 0) {}

void Broker::on_connect(ConnId conn, Clock::time_point now) {
  Peer p;
  p.connected_at = now;
  p.last_seen = now;
  peers_.emplace(conn, std::move(p));
  ++accepted_;
}

uint32_t Broker::max_frame_bytes(ConnId conn) const {
  auto it = peers_.find(conn);
  if (it == peers_.end() || it->second.state == PeerState::awaiting_hello) return kHelloFrameLimit;
  return cfg_.limits.max_key_bytes + cfg_.limits.max_value_bytes + 1024;
}

bool Broker::finished() const {
  return cfg_.world_size > 0 && ranks_goodbye_ == cfg_.world_size && peers_.empty();
}

void Broker::reply_ok(ConnId conn, uint64_t id) {
  proto::Response r;
  r.set_id(id);
  out_.send(conn, r);
}

void Broker::reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  if (code == proto::PROTOCOL) ++protocol_errors_;
  if (code == proto::LIMIT) ++limit_errors_;
  proto::Response r;
  r.set_id(id);
  r.set_code(code);
  r.set_message(std::move(message));
  out_.send(conn, r);
}

void Broker::reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  std::string lost;
  Peer who;
  if (auto it = peers_.find(conn); it != peers_.end() && it->second.state == PeerState::ready &&
                                   it->second.role == proto::ROLE_RANK && code != proto::TIMEOUT) {
    lost = describe_peer(it->second) + " was disconnected by the rendezvous daemon: " + message;
    who = it->second;
  }
  reply_error(conn, id, code, std::move(message));
  forget_peer(conn);
  out_.close(conn);
  if (!lost.empty()) abort_job(who, FailureHow::disconnected, std::move(lost));
}

void Broker::on_oversized_frame(ConnId conn, uint32_t announced, uint32_t limit) {
  if (!knows(conn)) return;
  reject_and_close(conn, 0, proto::LIMIT,
                   "frame of " + std::to_string(announced) + " bytes exceeds the limit of " +
                       std::to_string(limit) +
                       " bytes (values are limited by dp-rendezvousd --max-value-bytes); closing the connection");
}

void Broker::on_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  Peer& p = it->second;
  p.last_seen = now;
  ++requests_;
  proto::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    reject_and_close(conn, 0, proto::PROTOCOL,
                     "malformed frame: not a rendezvous request; closing the connection (is this a dp client of the same release?)");
    return;
  }
  if (p.state == PeerState::awaiting_hello) {
    if (req.op_case() != proto::Request::kHello) {
      ++rejected_auth_;
      reject_and_close(conn, req.id(), proto::UNAUTHORIZED,
                       "the first request must be hello with the job secret; closing the connection");
      return;
    }
    handle_hello(conn, p, req.id(), req.hello(), now);
    return;
  }
  handle_request(conn, p, req, now);
}

void Broker::handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h, Clock::time_point now) {
  if (h.protocol_version() != rdv::kProtocolVersion) {
    reject_and_close(conn, id, proto::PROTOCOL,
                     "protocol version " + std::to_string(h.protocol_version()) + " is not supported; dp-rendezvousd speaks version " +
                         std::to_string(rdv::kProtocolVersion) + ": use the dp client of the same slurm-dp release");
    return;
  }
  if (!secrets_equal(h.secret(), cfg_.secret)) {
    ++rejected_auth_;
    reject_and_close(conn, id, proto::UNAUTHORIZED,
                     "wrong job secret: use the DP_RDV_SECRET of this step; closing the connection");
    return;
  }
  if (h.host().size() > 255) {
    reject_and_close(conn, id, proto::INVALID_ARGUMENT, "hello: host name longer than 255 bytes");
    return;
  }
  if (aborted_) {
    reject_and_close(conn, id, proto::ABORTED, abort_reason_);
    return;
  }
  const bool is_rank = h.role() == proto::ROLE_RANK;
  if (h.role() != proto::ROLE_RANK && h.role() != proto::ROLE_AGENT) {
    reject_and_close(conn, id, proto::INVALID_ARGUMENT, "hello: unknown role " + std::to_string(h.role()));
    return;
  }
  if (h.world_size() != 0 && h.world_size() != cfg_.world_size) {
    reject_and_close(conn, id, proto::INVALID_ARGUMENT,
                     "hello: WORLD_SIZE " + std::to_string(h.world_size()) + " differs from the step's world size " +
                         std::to_string(cfg_.world_size) + ": the task's environment does not belong to this step");
    return;
  }
  if (is_rank) {
    if (h.rank() < 0 || h.rank() >= cfg_.world_size) {
      reject_and_close(conn, id, proto::INVALID_ARGUMENT,
                       "hello: RANK " + std::to_string(h.rank()) + " is outside 0.." + std::to_string(cfg_.world_size - 1));
      return;
    }
    const ConnId holder = rank_conn_[h.rank()];
    if (holder != 0) {
      auto other = peers_.find(holder);
      const std::string where = other != peers_.end() ? other->second.host : std::string("?");
      reject_and_close(conn, id, proto::CONFLICT,
                       "rank " + std::to_string(h.rank()) + " is already connected from host " + where +
                           ": two tasks claim the same RANK");
      return;
    }
    rank_conn_[h.rank()] = conn;
    ++ranks_connected_;
    if (!rank_hello_[h.rank()]) {
      rank_hello_[h.rank()] = 1;
      ++ranks_seen_;
    }
  }
  p.state = PeerState::ready;
  p.role = h.role();
  p.rank = is_rank ? h.rank() : -1;
  p.host = printable(h.host(), 255);
  reply_ok(conn, id);
  if (is_rank) {
    report_.on_hello(p.rank, p.host, now);
    phases_.reached(Phase::first_hello, now);
    if (ranks_seen_ == cfg_.world_size) phases_.reached(Phase::all_hellos, now);
  }
}

bool Broker::check_key(ConnId conn, uint64_t id, const std::string& key) {
  if (key.size() > cfg_.limits.max_key_bytes) {
    reply_error(conn, id, proto::LIMIT,
                "key of " + std::to_string(key.size()) + " bytes exceeds the limit of " +
                    std::to_string(cfg_.limits.max_key_bytes) + " bytes (dp-rendezvousd --max-key-bytes)");
    return false;
  }
  return true;
}

bool Broker::store_value(ConnId conn, uint64_t id, const std::string& key, const std::string& value) {
  if (value.size() > cfg_.limits.max_value_bytes) {
    reply_error(conn, id, proto::LIMIT,
                "value of " + std::to_string(value.size()) + " bytes for key " + shown(key) + " exceeds the limit of " +
                    std::to_string(cfg_.limits.max_value_bytes) + " bytes (dp-rendezvousd --max-value-bytes)");
    return false;
  }
  auto it = store_.find(key);
  const uint64_t old_bytes = it == store_.end() ? 0 : key.size() + it->second.size();
  const uint64_t new_total = bytes_stored_ - old_bytes + key.size() + value.size();
  if (new_total > cfg_.limits.max_total_bytes) {
    reply_error(conn, id, proto::LIMIT,
                "storing key " + shown(key) + " would exceed the step's limit of " +
                    std::to_string(cfg_.limits.max_total_bytes) + " stored bytes (dp-rendezvousd --max-total-bytes)");
    return false;
  }
  bytes_stored_ = new_total;
  if (it == store_.end()) {
    store_.emplace(key, value);
  } else {
    it->second = value;
  }
  key_changed(key);
  return true;
}

void Broker::handle_request(ConnId conn, Peer& p, const proto::Request& req, Clock::time_point now) {
  const uint64_t id = req.id();
  const auto op = req.op_case();
  if (op == proto::Request::kHeartbeat) {
    ++heartbeats_;
    if (p.rank >= 0 && req.heartbeat().has_progress()) report_.on_progress(p.rank, req.heartbeat().progress(), now);
    return;
  }
  if (op == proto::Request::kGoodbye) {
    if (p.rank >= 0) {
      if (req.goodbye().has_progress()) report_.on_progress(p.rank, req.goodbye().progress(), now);
      report_.on_goodbye(p.rank);
      if (!rank_goodbye_[p.rank]) {
        rank_goodbye_[p.rank] = 1;
        ++ranks_goodbye_;
      }
    }
    reply_ok(conn, id);
    forget_peer(conn);
    out_.close(conn);
    return;
  }
  if (op == proto::Request::kStats) {
    proto::Response r;
    r.set_id(id);
    *r.mutable_stats() = stats();
    out_.send(conn, r);
    return;
  }
  if (aborted_) {
    reply_error(conn, id, proto::ABORTED, abort_reason_);
    return;
  }
  switch (op) {
    case proto::Request::kHello:
      reply_error(conn, id, proto::PROTOCOL, "hello sent twice on one connection");
      return;
    case proto::Request::kSet: {
      const auto& m = req.set();
      if (!check_key(conn, id, m.key())) return;
      if (!store_value(conn, id, m.key(), m.value())) return;
      if (p.rank == 0) phases_.reached(Phase::id_published, now);
      if (p.role == proto::ROLE_AGENT) report_.on_agent_set(now);
      reply_ok(conn, id);
      return;
    }
    case proto::Request::kGet: {
      const auto& m = req.get();
      if (!check_key(conn, id, m.key())) return;
      auto it = store_.find(m.key());
      if (it != store_.end()) {
        proto::Response r;
        r.set_id(id);
        r.set_value(it->second);
        out_.send(conn, r);
        if (p.rank >= 0 && !rank_fetched_[p.rank]) {
          rank_fetched_[p.rank] = 1;
          if (++ranks_fetched_ == cfg_.world_size) phases_.reached(Phase::id_fetched_by_all, now);
        }
        return;
      }
      if (!m.blocking()) {
        reply_error(conn, id, proto::NOT_FOUND, "key " + shown(m.key()) + " does not exist");
        return;
      }
      const uint64_t wid = add_waiter(conn, id, WaitKind::get, {m.key()}, m.timeout_ms(), now);
      key_waiters_[m.key()].push_back(wid);
      return;
    }
    case proto::Request::kAdd: {
      const auto& m = req.add();
      if (!check_key(conn, id, m.key())) return;
      int64_t cur = 0;
      if (auto it = store_.find(m.key()); it != store_.end()) {
        const std::string& v = it->second;
        auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), cur);
        if (ec != std::errc() || ptr != v.data() + v.size()) {
          reply_error(conn, id, proto::INVALID_ARGUMENT,
                      "add on key " + shown(m.key()) + ": its value is not a decimal integer");
          return;
        }
      }
      int64_t next = 0;
      if (__builtin_add_overflow(cur, m.delta(), &next)) {
        reply_error(conn, id, proto::INVALID_ARGUMENT, "add on key " + shown(m.key()) + " overflows int64");
        return;
      }
      if (!store_value(conn, id, m.key(), std::to_string(next))) return;
      proto::Response r;
      r.set_id(id);
      r.set_number(next);
      out_.send(conn, r);
      return;
    }
    case proto::Request::kCompareAndSet: {
      const auto& m = req.compare_and_set();
      if (!check_key(conn, id, m.key())) return;
      auto it = store_.find(m.key());
      const bool match = it == store_.end() ? m.expected().empty() : it->second == m.expected();
      proto::Response r;
      r.set_id(id);
      if (match) {
        if (!store_value(conn, id, m.key(), m.desired())) return;
        r.set_value(m.desired());
      } else if (it != store_.end()) {
        r.set_value(it->second);
      }
      out_.send(conn, r);
      return;
    }
    case proto::Request::kErase: {
      const auto& m = req.erase();
      auto it = store_.find(m.key());
      if (it == store_.end()) {
        reply_error(conn, id, proto::NOT_FOUND, "key " + shown(m.key()) + " does not exist");
        return;
      }
      bytes_stored_ -= it->first.size() + it->second.size();
      store_.erase(it);
      reply_ok(conn, id);
      return;
    }
    case proto::Request::kExists: {
      proto::Response r;
      r.set_id(id);
      r.set_flag(store_.count(req.exists().key()) != 0);
      out_.send(conn, r);
      return;
    }
    case proto::Request::kWait: {
      const auto& m = req.wait();
      std::vector<std::string> missing;
      for (const auto& k : m.keys()) {
        if (!check_key(conn, id, k)) return;
        if (!store_.count(k)) missing.push_back(k);
      }
      if (missing.empty()) {
        reply_ok(conn, id);
        return;
      }
      const uint64_t wid = add_waiter(conn, id, WaitKind::wait, missing, m.timeout_ms(), now);
      for (const auto& k : missing) key_waiters_[k].push_back(wid);
      return;
    }
    case proto::Request::kBarrier: {
      const auto& m = req.barrier();
      if (p.rank < 0) {
        reply_error(conn, id, proto::INVALID_ARGUMENT,
                    "barrier " + shown(m.name()) + ": only ranks take part in barriers; connect with role rank");
        return;
      }
      if (!check_key(conn, id, m.name())) return;
      auto& b = barriers_[m.name()];
      if (b.arrived.empty()) b.arrived.assign(cfg_.world_size, 0);
      if (b.arrived[p.rank]) {
        reply_error(conn, id, proto::CONFLICT,
                    "barrier " + shown(m.name()) + ": rank " + std::to_string(p.rank) + " entered it twice");
        return;
      }
      const uint64_t wid =
          add_waiter(conn, id, WaitKind::barrier, {m.name()}, m.timeout_ms(), now);
      b.arrived[p.rank] = 1;
      b.waiters.push_back(wid);
      if (++b.count == cfg_.world_size) {
        BarrierState done = std::move(b);
        barriers_.erase(m.name());
        for (uint64_t x : done.waiters) finish_waiter(x);
        phases_.reached(Phase::first_barrier, now);
      }
      return;
    }
    case proto::Request::kAbort: {
      std::string who = describe_peer(p);
      abort_job(p, FailureHow::explicit_abort, "job aborted by " + who + ": " + printable(req.abort().reason(), 1024));
      reply_ok(conn, id);
      return;
    }
    default:
      reply_error(conn, id, proto::PROTOCOL,
                  "unknown operation (field " + std::to_string(static_cast<int>(op)) +
                      "): the client is newer than dp-rendezvousd; use the same slurm-dp release for both");
      return;
  }
}

uint64_t Broker::add_waiter(ConnId conn, uint64_t request_id, WaitKind kind,
                            std::vector<std::string> keys, uint32_t timeout_ms, Clock::time_point now) {
  const uint64_t wid = next_waiter_++;
  Waiter w;
  w.conn = conn;
  w.request_id = request_id;
  w.kind = kind;
  w.keys = std::move(keys);
  w.timeout = std::chrono::milliseconds(timeout_ms);
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
  if (auto p = peers_.find(w.conn); p != peers_.end()) {
    auto& v = p->second.waiters;
    v.erase(std::remove(v.begin(), v.end(), wid), v.end());
  }
  if (w.kind == WaitKind::barrier) {
    auto b = barriers_.find(w.keys.front());
    auto p = peers_.find(w.conn);
    if (b != barriers_.end()) {
      auto& bw = b->second.waiters;
      bw.erase(std::remove(bw.begin(), bw.end(), wid), bw.end());
      if (p != peers_.end() && p->second.rank >= 0 && b->second.arrived[p->second.rank]) {
        b->second.arrived[p->second.rank] = 0;
        --b->second.count;
      }
      if (b->second.count == 0) barriers_.erase(b);
    }
  }
  if (w.kind != WaitKind::barrier) {
    for (const auto& k : w.keys) {
      auto kw = key_waiters_.find(k);
      if (kw == key_waiters_.end()) continue;
      auto& v = kw->second;
      v.erase(std::remove(v.begin(), v.end(), wid), v.end());
      if (v.empty()) key_waiters_.erase(kw);
    }
  }
  waiters_.erase(it);
}

void Broker::finish_waiter(uint64_t wid) {
  auto it = waiters_.find(wid);
  if (it == waiters_.end()) return;
  const Waiter& w = it->second;
  proto::Response r;
  r.set_id(w.request_id);
  if (w.kind == WaitKind::get) {
    auto v = store_.find(w.keys.front());
    if (v != store_.end()) r.set_value(v->second);
    auto p = peers_.find(w.conn);
    if (p != peers_.end() && p->second.rank >= 0 && !rank_fetched_[p->second.rank]) {
      rank_fetched_[p->second.rank] = 1;
      if (++ranks_fetched_ == cfg_.world_size) phases_.reached(Phase::id_fetched_by_all, Clock::now());
    }
  }
  const ConnId conn = w.conn;
  if (w.kind == WaitKind::barrier) {
    // The barrier is already complete and erased; do not undo its arrival.
    it->second.kind = WaitKind::wait;
  }
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

void Broker::key_changed(const std::string& key) {
  auto it = key_waiters_.find(key);
  if (it == key_waiters_.end()) return;
  std::vector<uint64_t> ids = std::move(it->second);
  key_waiters_.erase(it);
  for (uint64_t wid : ids) {
    auto w = waiters_.find(wid);
    if (w == waiters_.end()) continue;  // already answered, timed out or gone
    if (w->second.kind == WaitKind::get) {
      finish_waiter(wid);
      continue;
    }
    auto& keys = w->second.keys;
    keys.erase(std::remove_if(keys.begin(), keys.end(), [&](const std::string& k) { return store_.count(k) != 0; }),
               keys.end());
    if (keys.empty()) finish_waiter(wid);
  }
}

std::string Broker::describe_peer(const Peer& p) const {
  if (p.rank >= 0) return "rank " + std::to_string(p.rank) + " (host " + (p.host.empty() ? "?" : p.host) + ")";
  return "an agent on host " + (p.host.empty() ? std::string("?") : p.host);
}

std::string Broker::missing_ranks(const BarrierState& b) const {
  std::string s;
  int shown_n = 0;
  for (int r = 0; r < cfg_.world_size && shown_n < 8; ++r) {
    if (!b.arrived.empty() && b.arrived[r]) continue;
    s += (shown_n ? "," : "") + std::to_string(r);
    ++shown_n;
  }
  if (cfg_.world_size - b.count > shown_n) s += ",...";
  return s;
}

void Broker::forget_peer(ConnId conn) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  std::vector<uint64_t> ws = it->second.waiters;
  for (uint64_t wid : ws) drop_waiter(wid);
  const int rank = it->second.rank;
  if (rank >= 0 && rank_conn_[rank] == conn) {
    rank_conn_[rank] = 0;
    --ranks_connected_;
  }
  peers_.erase(conn);
}

void Broker::abort_job(const Peer& who, FailureHow how, std::string what) {
  if (aborted_) return;
  if (how == FailureHow::hang) hang_rank_ = who.rank;
  abort_job(report_.first_failure(who.rank, who.host, how, what, Clock::now()));
}

void Broker::abort_job(std::string reason) {
  if (aborted_) return;
  aborted_ = true;
  abort_reason_ = std::move(reason);
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg_.job_id.c_str(), cfg_.step_id.c_str(),
               abort_reason_.c_str());
  std::vector<uint64_t> ids;
  ids.reserve(waiters_.size());
  for (const auto& [wid, w] : waiters_) ids.push_back(wid);
  for (uint64_t wid : ids) fail_waiter(wid, proto::ABORTED, abort_reason_);
  proto::Response push;
  push.set_id(0);
  push.set_code(proto::ABORTED);
  push.set_message(abort_reason_);
  if (hang_rank_ >= 0) push.mutable_hang()->set_rank(hang_rank_);
  // A send may drop a peer that does not read (and so change peers_): walk a copy.
  std::vector<ConnId> ready;
  ready.reserve(peers_.size());
  for (const auto& [conn, p] : peers_) {
    if (p.state == PeerState::ready) ready.push_back(conn);
  }
  for (ConnId conn : ready) {
    if (peers_.count(conn)) out_.send(conn, push);
  }
}

void Broker::on_disconnect(ConnId conn, Clock::time_point) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  const Peer p = it->second;
  forget_peer(conn);
  if (p.state == PeerState::ready && p.role == proto::ROLE_RANK) {
    abort_job(p, FailureHow::lost_connection, describe_peer(p) +
              " lost its connection to the rendezvous daemon without saying goodbye: the task exited, crashed or was killed");
  }
}

void Broker::on_tick(Clock::time_point now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const uint64_t wid = deadlines_.begin()->second;
    auto it = waiters_.find(wid);
    if (it == waiters_.end()) {
      deadlines_.erase(deadlines_.begin());
      continue;
    }
    const Waiter& w = it->second;
    std::string msg;
    switch (w.kind) {
      case WaitKind::get:
        msg = "get " + shown(w.keys.front()) + " timed out after " + ms_text(w.timeout) +
              ": no peer set the key; check that the publishing rank is running";
        break;
      case WaitKind::wait:
        msg = "wait timed out after " + ms_text(w.timeout) + ": " + std::to_string(w.keys.size()) +
              " key(s) still missing, first " + shown(w.keys.front());
        break;
      case WaitKind::barrier: {
        auto b = barriers_.find(w.keys.front());
        msg = "barrier " + shown(w.keys.front()) + " timed out after " + ms_text(w.timeout);
        if (b != barriers_.end()) {
          msg += ": " + std::to_string(b->second.count) + " of " + std::to_string(cfg_.world_size) +
                 " ranks arrived; missing ranks " + missing_ranks(b->second);
        }
        break;
      }
    }
    fail_waiter(wid, proto::TIMEOUT, std::move(msg));
  }

  if (!aborted_) {
    if (auto hang = report_.check_hang(now)) {
      Peer who;
      who.rank = hang->rank;
      if (hang->rank >= 0 && rank_conn_[hang->rank] != 0) who = peers_[rank_conn_[hang->rank]];
      abort_job(who, FailureHow::hang, hang->message);
    }
  }

  std::vector<ConnId> late_hello, silent;
  for (const auto& [conn, p] : peers_) {
    if (p.state == PeerState::awaiting_hello) {
      if (now - p.connected_at >= cfg_.limits.hello_timeout) late_hello.push_back(conn);
    } else if (p.role == proto::ROLE_RANK && cfg_.limits.heartbeat_timeout.count() > 0 &&
               now - p.last_seen >= cfg_.limits.heartbeat_timeout) {
      silent.push_back(conn);
    }
  }
  for (ConnId c : late_hello) {
    reject_and_close(c, 0, proto::TIMEOUT,
                     "no hello within " + ms_text(cfg_.limits.hello_timeout) + " of connecting; closing the connection");
  }
  for (ConnId c : silent) {
    auto it = peers_.find(c);
    if (it == peers_.end()) continue;
    const Peer p = it->second;
    reject_and_close(c, 0, proto::TIMEOUT, "no heartbeat for " + ms_text(cfg_.limits.heartbeat_timeout));
    abort_job(p, FailureHow::silence, describe_peer(p) + " sent no heartbeat for " + ms_text(cfg_.limits.heartbeat_timeout) +
              ": the task hangs or its node is unreachable");
  }
}

proto::Stats Broker::stats() const {
  proto::Stats s;
  s.set_connections(peers_.size());
  s.set_ranks_connected(static_cast<uint64_t>(ranks_connected_));
  s.set_keys(store_.size());
  s.set_bytes_stored(bytes_stored_);
  s.set_requests(requests_);
  std::string t;
  t += "job " + cfg_.job_id + " step " + cfg_.step_id + "\n";
  t += "world_size " + std::to_string(cfg_.world_size) + "\n";
  t += "connections " + std::to_string(peers_.size()) + "\n";
  t += "connections_accepted " + std::to_string(accepted_) + "\n";
  t += "ranks_connected " + std::to_string(ranks_connected_) + "\n";
  t += "ranks_seen " + std::to_string(ranks_seen_) + "\n";
  t += "ranks_goodbye " + std::to_string(ranks_goodbye_) + "\n";
  t += "keys " + std::to_string(store_.size()) + "\n";
  t += "bytes_stored " + std::to_string(bytes_stored_) + "\n";
  t += "requests " + std::to_string(requests_) + "\n";
  t += "heartbeats " + std::to_string(heartbeats_) + "\n";
  t += "pending_calls " + std::to_string(waiters_.size()) + "\n";
  t += "rejected_unauthorized " + std::to_string(rejected_auth_) + "\n";
  t += "protocol_errors " + std::to_string(protocol_errors_) + "\n";
  t += "limit_errors " + std::to_string(limit_errors_) + "\n";
  t += std::string("aborted ") + (aborted_ ? "yes" : "no") + "\n";
  t += "startup " + phases_.summary() + "\n";
  s.set_text(std::move(t));
  s.set_startup_line(startup_line());
  s.set_report_json(report_json(Clock::now()));
  s.set_rank_table(report_.text(Clock::now()));
  if (report_.failure()) s.set_first_failure(report_.failure()->message);
  return s;
}

std::string Broker::report_json(Clock::time_point now) const {
  DaemonCounters c;
  c.connections = peers_.size();
  c.connections_accepted = accepted_;
  c.requests = requests_;
  c.heartbeats = heartbeats_;
  c.keys = store_.size();
  c.bytes_stored = bytes_stored_;
  c.refused_unauthorized = rejected_auth_;
  c.protocol_errors = protocol_errors_;
  c.limit_errors = limit_errors_;
  return report_.json(phases_, c, now);
}

}  // namespace dp::daemon
