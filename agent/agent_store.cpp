// The node's store traffic: one upstream request per local request, except
// gets (identical blocking gets in flight are one upstream get; write-once
// keys are answered from the agent's cache) and barriers (the node's ranks
// arrive upstream together, once).
#include "agent_core.hpp"
#include "frame_codec.hpp"

namespace dp::agent {

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
  if (const std::string* hit = folds_.cached(g.key()); hit && !abort_) {
    proto::Response r;
    r.set_id(req.id());
    r.set_value(*hit);
    r.set_flag(true);
    return out_.to_rank(conn, r);
  }
  if (!g.blocking()) return forward(conn, -1, req);
  if (!folds_.wait_get(g.key(), conn, req.id(), g.timeout_ms(), now)) return;
  proto::Request up;
  auto* ug = up.mutable_get();
  ug->set_key(g.key());
  ug->set_blocking(true);
  ug->set_timeout_ms(0);
  upstream(std::move(up), Upstream{Kind::get, 0, 0, g.key(), {}});
}

void AgentCore::local_barrier(ConnId conn, int rank, const proto::Request& req,
                              Clock::time_point now) {
  const proto::Barrier& b = req.barrier();
  if (auto up = folds_.arrive(b.name(), rank, conn, req.id(), b.timeout_ms(), cfg_.node_ranks, now))
    upstream(std::move(*up), Upstream{Kind::barrier, 0, 0, b.name(), {}});
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
    case Kind::get:
      if (r.code() == proto::OK && r.flag()) folds_.remember(u.key, r.value());
      return answer_waiters(folds_.take_get(u.key), r);
    case Kind::barrier: return answer_waiters(folds_.take_barrier(u.key), r);
    case Kind::exchange: return step_ports_answered(u, r);
    case Kind::set_once:
      if (r.code() == proto::OK) folds_.remember(u.key, u.value);
      break;
    case Kind::plain: break;
  }
  if (u.conn == 0 || !locals_.count(u.conn)) return;  // the agent's own, or the rank left
  proto::Response back = r;
  back.set_id(u.local_id);
  out_.to_rank(u.conn, back);
}

// One upstream answer ends a folded get or barrier: every local waiter still
// connected gets it under its own request id.
void AgentCore::answer_waiters(const std::vector<NodeFolds::Waiter>& waiters, proto::Response r) {
  for (const auto& w : waiters) {
    if (!locals_.count(w.conn)) continue;
    r.set_id(w.id);
    out_.to_rank(w.conn, r);
  }
}

void AgentCore::expire_waiters(Clock::time_point now) {
  const auto rank_of = [this](ConnId c) {
    auto l = locals_.find(c);
    return l == locals_.end() ? -1 : l->second.rank;
  };
  for (const auto& late : folds_.expire(now, cfg_.host, cfg_.node_ranks, rank_of))
    reply(late.conn, late.id, proto::TIMEOUT, late.message);
}

}  // namespace dp::agent
