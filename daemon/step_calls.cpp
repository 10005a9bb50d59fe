#include "step_calls.hpp"

#include "dp/master_port.hpp"
#include "dp/shown_value.hpp"
#include "step_ports_value.hpp"

namespace dp::daemon {

StepCalls::StepCalls(StepState& step, BlockingCalls& blocking, StepEffects& effects)
    : step_(step), blocking_(blocking), effects_(effects) {}

bool StepCalls::store_value(const Call& c, const std::string& key, const std::string& value,
                            bool once) {
  if (auto r = step_.store.put(c.space, key, value, once); !r) {
    step_.reply_error(c.conn, c.id, r.error());
    return false;
  }
  return true;
}

void StepCalls::goodbye(const Call& c, const proto::Goodbye& m) {
  if (c.peer.rank >= 0) {
    // The final counters, so even a short step reports its progress.
    if (m.has_progress()) step_.report.on_progress(c.peer.rank, m.progress(), c.now);
    step_.report.on_goodbye(c.peer.rank);
  }
  step_.reply_ok(c.conn, c.id);
  effects_.forget_peer(c.conn, /*goodbye=*/true);
  step_.out.close(c.conn);
}

void StepCalls::set(const Call& c, const proto::Set& m) {
  if (auto k = step_.store.check_key(m.key()); !k)
    return step_.reply_error(c.conn, c.id, k.error());
  if (!store_value(c, m.key(), m.value(), m.once())) return;
  blocking_.key_changed(c.space, m.key(), c.now);
  if (c.space != proto::SPACE_STEP) return step_.reply_ok(c.conn, c.id);
  if (c.peer.rank == 0 || (c.peer.role == proto::ROLE_NODE && step_.peers.holds(c.conn, 0)))
    step_.phases.reached(Phase::id_published, c.now);
  // A tool's agent (no node agents) publishes the master port with a set.
  if (c.peer.role == proto::ROLE_AGENT) step_.report.on_agent_set(c.now);
  step_.reply_ok(c.conn, c.id);
}

// The master node's agent publishes the step's ports (or why it has none)
// once: kept write-once under kStepPortsKey for the other nodes' agents, and
// named in the report. Only the node holding rank 0 speaks for them.
void StepCalls::publish_ports(const Call& c, const proto::PublishPorts& m) {
  if (c.peer.role != proto::ROLE_NODE || !step_.peers.holds(c.conn, 0))
    return step_.reply_error(
        c.conn, c.id, proto::UNAUTHORIZED,
        "publish_ports: only the node agent holding rank 0 publishes the step's "
        "ports");
  auto v = rdv::from_proto(m.value());
  if (!v) return step_.reply_error(c.conn, c.id, v.error());
  const Call step{c.conn, c.peer, c.id, c.now, proto::SPACE_STEP};
  if (!store_value(step, kStepPortsKey, m.value().SerializeAsString(), /*once=*/true)) return;
  blocking_.key_changed(proto::SPACE_STEP, kStepPortsKey, c.now);
  step_.report.on_agent_set(c.now);
  if (!v->failure) step_.report.on_step_ports(StepPorts{v->coordinator, v->dp_ports});
  step_.reply_ok(c.conn, c.id);
}

void StepCalls::get(const Call& c, const proto::Get& m) {
  if (auto k = step_.store.check_key(m.key()); !k)
    return step_.reply_error(c.conn, c.id, k.error());
  if (const KvStore::Entry* e = step_.store.entry(c.space, m.key())) {
    proto::Response r;
    r.set_id(c.id);
    r.set_value(e->value);
    r.set_flag(e->once);  // a node agent may cache it
    step_.out.send(c.conn, r);
    if (c.space == proto::SPACE_STEP) blocking_.mark_fetched(c.conn, c.peer, c.now);
    return;
  }
  if (!m.blocking())
    return step_.reply_error(c.conn, c.id, proto::NOT_FOUND,
                             "key " + shown_key(m.key()) + " does not exist");
  if (auto no = step_.calls.refusal(nullptr))
    return step_.reply_error(c.conn, c.id, proto::LIMIT, *no);
  blocking_.add(c, WaitKind::get, {m.key()}, m.timeout_ms());
}

void StepCalls::compare_and_set(const Call& c, const proto::CompareAndSet& m) {
  if (auto k = step_.store.check_key(m.key()); !k)
    return step_.reply_error(c.conn, c.id, k.error());
  const std::string* cur = step_.store.find(c.space, m.key());
  const bool match = cur == nullptr ? m.expected().empty() : *cur == m.expected();
  proto::Response r;
  r.set_id(c.id);
  if (match) {
    if (c.space == proto::SPACE_TORCH && step_.restarts && !step_.cfg.limits.restart_programs)
      step_.restarts->launchers.note_write(c.peer.node, m.key(), cur, m.desired());
    if (!store_value(c, m.key(), m.desired())) return;
    blocking_.key_changed(c.space, m.key(), c.now);
    r.set_value(m.desired());
  } else if (cur != nullptr) {
    r.set_value(*cur);
  } else if (c.space == proto::SPACE_TORCH) {
    r.set_value(m.expected());  // PyTorch's server answers a missing key with the expected value
  }
  step_.out.send(c.conn, r);
}

void StepCalls::wait(const Call& c, const proto::Wait& m) {
  std::vector<std::string> missing;
  for (const auto& k : m.keys()) {
    if (auto ok = step_.store.check_key(k); !ok) return step_.reply_error(c.conn, c.id, ok.error());
    if (!step_.store.contains(c.space, k)) missing.push_back(k);
  }
  const bool value = m.value() && m.keys_size() == 1;
  if (missing.empty())
    return blocking_.answer_wait(c.conn, c.id, c.space, value ? &m.keys(0) : nullptr);
  if (auto no = step_.calls.refusal(nullptr))
    return step_.reply_error(c.conn, c.id, proto::LIMIT, *no);
  blocking_.add(c, WaitKind::wait, std::move(missing), m.timeout_ms(), value);
}

// A rank arrives alone; a node agent's call brings its listed ranks together (folded).
void StepCalls::barrier(const Call& c, const proto::Barrier& m) {
  auto ranks = step_.peers.arriving_ranks(c.conn, c.peer, m);
  if (!ranks) return step_.reply_error(c.conn, c.id, ranks.error());
  if (c.peer.role == proto::ROLE_NODE)  // its listed ranks are heard
    for (int r : *ranks) step_.live.heard(r, c.now);
  if (auto k = step_.store.check_key(m.name()); !k)
    return step_.reply_error(c.conn, c.id, k.error());
  if (auto no = step_.calls.refusal(&m.name()))
    return step_.reply_error(c.conn, c.id, proto::LIMIT, *no);
  Waiter w;
  w.conn = c.conn;
  w.request_id = c.id;
  w.kind = WaitKind::barrier;
  w.keys = {m.name()};
  w.ranks = std::move(*ranks);
  w.since = c.now;
  w.timeout = std::chrono::milliseconds(m.timeout_ms());
  int twice = -1;
  auto arrival = step_.calls.arrive(std::move(w), &twice);
  if (!arrival) {
    return step_.reply_error(
        c.conn, c.id, proto::CONFLICT,
        "barrier " + shown_key(m.name()) + ": rank " + std::to_string(twice) + " entered it twice");
  }
  if (arrival->complete.empty()) return;
  for (uint64_t x : arrival->complete) blocking_.finish(x, c.now);
  step_.phases.reached(Phase::first_barrier, c.now);
}

void StepCalls::abort(const Call& c, const proto::Abort& m) {
  AbortCause cause = cause_of(c.peer, AbortCause::How::explicit_abort, "");
  std::string who = step_.peers.describe_peer(c.peer);
  // From a node agent: the local rank that asked.
  if (c.peer.role == proto::ROLE_NODE && m.has_rank() && step_.peers.holds(c.conn, m.rank())) {
    cause.rank = m.rank();
    who = step_.peers.describe_rank(m.rank());
  }
  cause.message = "job aborted by " + who + ": " + shown_value(m.reason(), 1024);
  // Only the node that holds rank 0 speaks for the master node.
  if (m.has_master_failure() && c.peer.role == proto::ROLE_NODE && step_.peers.holds(c.conn, 0))
    cause.master_failure = rdv::from_proto(m.master_failure());
  effects_.abort_job(std::move(cause));
  step_.reply_ok(c.conn, c.id);
}

}  // namespace dp::daemon
