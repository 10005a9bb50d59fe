// The node's store traffic: one upstream request per local request, except
// gets (identical blocking gets in flight are one upstream get; write-once
// keys are answered from the agent's cache) and barriers (the node's ranks
// arrive upstream together, once).
#include <algorithm>

#include "agent_core.hpp"
#include "dp/shown_value.hpp"
#include "frame_codec.hpp"

namespace dp::agent {
namespace {

// One upstream answer ends a folded get or barrier: every local waiter still
// connected gets it under its own request id. (Templates: the tables and
// waiters are AgentCore's private types.)
template <class Table, class Locals>
void answer_waiters(Table& table, const std::string& key, proto::Response r, const Locals& locals,
                    AgentOutbox& out) {
  auto it = table.find(key);
  if (it == table.end()) return;
  const auto waiters = std::move(it->second.waiters);
  table.erase(it);
  for (const auto& w : waiters) {
    if (!locals.count(w.conn)) continue;
    r.set_id(w.id);
    out.to_rank(w.conn, r);
  }
}

Clock::time_point deadline_of(uint32_t timeout_ms, Clock::time_point now) {
  // 0 on the wire: no deadline.
  return timeout_ms == 0 ? Clock::time_point::max() : now + std::chrono::milliseconds(timeout_ms);
}

}  // namespace

void AgentCore::forward(ConnId conn, int rank, const proto::Request& req) {
  proto::Request up = req;
  Upstream u{Kind::plain, conn, req.id(), {}, {}};
  if (up.has_goodbye()) up.mutable_goodbye()->set_rank(rank);
  if (up.has_abort()) up.mutable_abort()->set_rank(rank);
  if (up.has_set() && up.set().once())
    u = Upstream{Kind::set_once, conn, req.id(), up.set().key(), up.set().value()};
  upstream(std::move(up), std::move(u));
}

void AgentCore::local_get(ConnId conn, const proto::Request& req, Clock::time_point now) {
  const proto::Get& g = req.get();
  auto hit = cache_.find(g.key());
  if (hit != cache_.end() && !abort_) {
    proto::Response r;
    r.set_id(req.id());
    r.set_value(hit->second);
    r.set_flag(true);
    return out_.to_rank(conn, r);
  }
  if (!g.blocking()) return forward(conn, -1, req);
  GetState& s = gets_[g.key()];
  s.waiters.push_back(Waiter{conn, req.id(), deadline_of(g.timeout_ms(), now)});
  if (s.upstream != 0) return;  // the same key is on its way already
  // Each local waiter keeps its own deadline here; upstream the get waits
  // until the key exists, so a later waiter never needs a second request.
  proto::Request up;
  auto* ug = up.mutable_get();
  ug->set_key(g.key());
  ug->set_blocking(true);
  ug->set_timeout_ms(0);
  s.upstream = upstream(std::move(up), Upstream{Kind::get, 0, 0, g.key(), {}});
}

void AgentCore::local_barrier(ConnId conn, int rank, const proto::Request& req,
                              Clock::time_point now) {
  const proto::Barrier& b = req.barrier();
  BarrierState& s = barriers_[b.name()];
  s.arrived.insert(rank);
  s.waiters.push_back(Waiter{conn, req.id(), deadline_of(b.timeout_ms(), now)});
  if (s.sent || s.arrived.size() < cfg_.node_ranks.size()) return;
  // Everyone of this node is here: one arrival upstream, with the time the
  // most patient local rank has left (the others time out here).
  Clock::time_point last = now;
  for (const Waiter& w : s.waiters) last = std::max(last, w.deadline);
  proto::Request up;
  auto* ub = up.mutable_barrier();
  ub->set_name(b.name());
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last - now).count();
  ub->set_timeout_ms(last == Clock::time_point::max()
                         ? 0
                         : static_cast<uint32_t>(std::clamp<long long>(left, 1, UINT32_MAX)));
  for (int32_t r : cfg_.node_ranks) ub->add_ranks(r);
  s.sent = true;
  upstream(std::move(up), Upstream{Kind::barrier, 0, 0, b.name(), {}});
}

uint64_t AgentCore::send_for(UpstreamSink& sink, proto::Request req, bool resend) {
  Upstream u;
  u.kind = Kind::sink;
  u.sink = &sink;
  u.resend = resend;
  return upstream(std::move(req), std::move(u));
}

void AgentCore::cancel_for(uint64_t id) {
  if (pending_.erase(id) == 0) return;
  proto::Request req;
  req.mutable_cancel_call()->set_request_id(id);
  upstream(std::move(req), Upstream{Kind::plain, 0, 0, {}, {}});
}

void AgentCore::answered(const Upstream& u, const proto::Response& r) {
  switch (u.kind) {
    case Kind::sink: return u.sink->on_upstream(r.id(), r);
    case Kind::get: return answer_get(u.key, r);
    case Kind::barrier: return answer_barrier(u.key, r);
    case Kind::exchange: return step_ports_answered(u, r);
    case Kind::set_once:
      if (r.code() == proto::OK) remember(u.key, u.value);
      break;
    case Kind::plain: break;
  }
  if (u.conn == 0 || !locals_.count(u.conn)) return;  // the agent's own, or the rank left
  proto::Response back = r;
  back.set_id(u.local_id);
  out_.to_rank(u.conn, back);
}

void AgentCore::answer_get(const std::string& key, const proto::Response& r) {
  if (r.code() == proto::OK && r.flag()) remember(key, r.value());
  answer_waiters(gets_, key, r, locals_, out_);
}

void AgentCore::answer_barrier(const std::string& name, const proto::Response& r) {
  answer_waiters(barriers_, name, r, locals_, out_);
}

void AgentCore::remember(const std::string& key, const std::string& value) {
  if (cache_.count(key) || cache_bytes_ + key.size() + value.size() > cfg_.max_cache_bytes) return;
  cache_bytes_ += key.size() + value.size();
  cache_.emplace(key, value);
}

std::string AgentCore::missing_local(const BarrierState& b) const {
  std::string out;
  for (int32_t r : cfg_.node_ranks) {
    if (b.arrived.count(r)) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

// Local deadlines: a get still waiting upstream, a barrier not yet complete
// on this node (one sent upstream is the daemon's to time out).
void AgentCore::expire_waiters(Clock::time_point now) {
  for (auto& [key, s] : gets_) {
    auto late = std::stable_partition(s.waiters.begin(), s.waiters.end(),
                                      [&](const Waiter& w) { return w.deadline > now; });
    for (auto w = late; w != s.waiters.end(); ++w)
      reply(w->conn, w->id, proto::TIMEOUT,
            "get " + shown_key(key) + ": no rank set the key before the deadline (node " +
                cfg_.host + ")");
    s.waiters.erase(late, s.waiters.end());
  }
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    BarrierState& b = it->second;
    if (!b.sent) {
      std::optional<std::string> missing;  // as the first late waiter found it; ticks stay cheap
      for (const Waiter& w : b.waiters) {
        if (w.deadline > now) continue;
        if (!missing) missing = missing_local(b);
        auto l = locals_.find(w.conn);
        if (l != locals_.end()) b.arrived.erase(l->second.rank);
        reply(w.conn, w.id, proto::TIMEOUT,
              "barrier " + shown_key(it->first) + " timed out on node " + cfg_.host +
                  ": local ranks not arrived: " + *missing);
      }
      b.waiters.erase(std::remove_if(b.waiters.begin(), b.waiters.end(),
                                     [&](const Waiter& w) { return w.deadline <= now; }),
                      b.waiters.end());
    }
    it = b.waiters.empty() && !b.sent ? barriers_.erase(it) : std::next(it);
  }
}

}  // namespace dp::agent
