// One function per request of an authenticated peer.
#include "broker.hpp"
#include "dp/master_port.hpp"
#include "step_ports_value.hpp"

namespace dp::daemon {

bool Broker::store_value(const Call& c, const std::string& key, const std::string& value,
                         bool once) {
  if (auto r = store_.put(c.space, key, value, once); !r) {
    reply_error(c.conn, c.id, r.error());
    return false;
  }
  return true;
}

// A get completed: the start-up phase counts every rank the caller speaks for.
void Broker::mark_fetched(ConnId conn, const Peer& p, Clock::time_point now) {
  bool all = p.rank >= 0 && live_.mark_fetched(p.rank);
  for (int r : p.node_ranks) {
    if (peers_.holds(conn, r) && live_.mark_fetched(r)) all = true;
  }
  if (all) phases_.reached(Phase::id_fetched_by_all, now);
}

void Broker::op_goodbye(const Call& c, const proto::Goodbye& m) {
  if (c.peer.role == proto::ROLE_NODE) return node_goodbye(c, m);
  if (c.peer.rank >= 0) {
    // The final counters, so even a short step reports its progress.
    if (m.has_progress()) report_.on_progress(c.peer.rank, m.progress(), c.now);
    report_.on_goodbye(c.peer.rank);
  }
  reply_ok(c.conn, c.id);
  forget_peer(c.conn, /*goodbye=*/true);
  out_.close(c.conn);
}

void Broker::op_set(const Call& c, const proto::Set& m) {
  if (auto k = store_.check_key(m.key()); !k) return reply_error(c.conn, c.id, k.error());
  if (!store_value(c, m.key(), m.value(), m.once())) return;
  key_changed(c.space, m.key(), c.now);
  if (c.space != proto::SPACE_STEP) return reply_ok(c.conn, c.id);
  if (c.peer.rank == 0 || (c.peer.role == proto::ROLE_NODE && peers_.holds(c.conn, 0)))
    phases_.reached(Phase::id_published, c.now);
  // A tool's agent (no node agents) publishes the master port with a set.
  if (c.peer.role == proto::ROLE_AGENT) report_.on_agent_set(c.now);
  reply_ok(c.conn, c.id);
}

// The master node's agent publishes the step's ports (or why it has none)
// once: kept write-once under kStepPortsKey for the other nodes' agents, and
// named in the report. Only the node holding rank 0 speaks for them.
void Broker::op_publish_ports(const Call& c, const proto::PublishPorts& m) {
  if (c.peer.role != proto::ROLE_NODE || !peers_.holds(c.conn, 0))
    return reply_error(c.conn, c.id, proto::UNAUTHORIZED,
                       "publish_ports: only the node agent holding rank 0 publishes the step's "
                       "ports");
  auto v = rdv::from_proto(m.value());
  if (!v) return reply_error(c.conn, c.id, v.error());
  const Call step{c.conn, c.peer, c.id, c.now, proto::SPACE_STEP};
  if (!store_value(step, kStepPortsKey, m.value().SerializeAsString(), /*once=*/true)) return;
  key_changed(proto::SPACE_STEP, kStepPortsKey, c.now);
  report_.on_agent_set(c.now);
  if (!v->failure) report_.on_step_ports(StepPorts{v->coordinator, v->dp_ports});
  reply_ok(c.conn, c.id);
}

void Broker::op_get(const Call& c, const proto::Get& m) {
  if (auto k = store_.check_key(m.key()); !k) return reply_error(c.conn, c.id, k.error());
  if (const KvStore::Entry* e = store_.entry(c.space, m.key())) {
    proto::Response r;
    r.set_id(c.id);
    r.set_value(e->value);
    r.set_flag(e->once);  // a node agent may cache it
    out_.send(c.conn, r);
    if (c.space == proto::SPACE_STEP) mark_fetched(c.conn, c.peer, c.now);
    return;
  }
  if (!m.blocking())
    return reply_error(c.conn, c.id, proto::NOT_FOUND,
                       "key " + shown_key(m.key()) + " does not exist");
  if (auto no = calls_.refusal(nullptr)) return reply_error(c.conn, c.id, proto::LIMIT, *no);
  add_waiter(c, WaitKind::get, {m.key()}, m.timeout_ms());
}

void Broker::op_compare_and_set(const Call& c, const proto::CompareAndSet& m) {
  if (auto k = store_.check_key(m.key()); !k) return reply_error(c.conn, c.id, k.error());
  const std::string* cur = store_.find(c.space, m.key());
  const bool match = cur == nullptr ? m.expected().empty() : *cur == m.expected();
  proto::Response r;
  r.set_id(c.id);
  if (match) {
    if (c.space == proto::SPACE_TORCH && restarts_ && !cfg_.limits.restart_programs)
      restarts_->launchers.note_write(c.peer.node, m.key(), cur, m.desired());
    if (!store_value(c, m.key(), m.desired())) return;
    key_changed(c.space, m.key(), c.now);
    r.set_value(m.desired());
  } else if (cur != nullptr) {
    r.set_value(*cur);
  } else if (c.space == proto::SPACE_TORCH) {
    r.set_value(m.expected());  // PyTorch's server answers a missing key with the expected value
  }
  out_.send(c.conn, r);
}

void Broker::op_wait(const Call& c, const proto::Wait& m) {
  std::vector<std::string> missing;
  for (const auto& k : m.keys()) {
    if (auto ok = store_.check_key(k); !ok) return reply_error(c.conn, c.id, ok.error());
    if (!store_.contains(c.space, k)) missing.push_back(k);
  }
  if (missing.empty()) return reply_ok(c.conn, c.id);
  if (auto no = calls_.refusal(nullptr)) return reply_error(c.conn, c.id, proto::LIMIT, *no);
  add_waiter(c, WaitKind::wait, std::move(missing), m.timeout_ms());
}

// A rank arrives alone; a node agent's call brings its listed ranks together (folded).
void Broker::op_barrier(const Call& c, const proto::Barrier& m) {
  auto ranks = peers_.arriving_ranks(c.conn, c.peer, m);
  if (!ranks) return reply_error(c.conn, c.id, ranks.error());
  if (c.peer.role == proto::ROLE_NODE)  // its listed ranks are heard
    for (int r : *ranks) live_.heard(r, c.now);
  if (auto k = store_.check_key(m.name()); !k) return reply_error(c.conn, c.id, k.error());
  if (auto no = calls_.refusal(&m.name())) return reply_error(c.conn, c.id, proto::LIMIT, *no);
  Waiter w;
  w.conn = c.conn;
  w.request_id = c.id;
  w.kind = WaitKind::barrier;
  w.keys = {m.name()};
  w.ranks = std::move(*ranks);
  w.since = c.now;
  w.timeout = std::chrono::milliseconds(m.timeout_ms());
  int twice = -1;
  auto arrival = calls_.arrive(std::move(w), &twice);
  if (!arrival) {
    return reply_error(
        c.conn, c.id, proto::CONFLICT,
        "barrier " + shown_key(m.name()) + ": rank " + std::to_string(twice) + " entered it twice");
  }
  if (arrival->complete.empty()) return;
  for (uint64_t x : arrival->complete) finish_waiter(x, c.now);
  phases_.reached(Phase::first_barrier, c.now);
}

void Broker::op_abort(const Call& c, const proto::Abort& m) {
  AbortCause cause = cause_of(c.peer, AbortCause::How::explicit_abort, "");
  std::string who = peers_.describe_peer(c.peer);
  // From a node agent: the local rank that asked.
  if (c.peer.role == proto::ROLE_NODE && m.has_rank() && peers_.holds(c.conn, m.rank())) {
    cause.rank = m.rank();
    who = peers_.describe_rank(m.rank());
  }
  cause.message = "job aborted by " + who + ": " + shown_value(m.reason(), 1024);
  // Only the node that holds rank 0 speaks for the master node.
  if (m.has_master_failure() && c.peer.role == proto::ROLE_NODE && peers_.holds(c.conn, 0))
    cause.master_failure = rdv::from_proto(m.master_failure());
  abort_job(std::move(cause));
  reply_ok(c.conn, c.id);
}

}  // namespace dp::daemon
