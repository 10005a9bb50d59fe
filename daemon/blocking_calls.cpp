#include "blocking_calls.hpp"

#include "dp/duration_text.hpp"
#include "dp/shown_value.hpp"

namespace dp::daemon {

void BlockingCalls::add(const Call& c, WaitKind kind, std::vector<std::string> keys,
                        uint32_t timeout_ms, bool value) {
  Waiter w;
  w.value = value;
  w.conn = c.conn;
  w.request_id = c.id;
  w.kind = kind;
  w.space = c.space;
  w.keys = std::move(keys);
  w.timeout = std::chrono::milliseconds(timeout_ms);
  w.since = c.now;
  step_.calls.add(std::move(w));
}

void BlockingCalls::cancel(const Call& c, const proto::CancelCall& m) {
  for (uint64_t wid : step_.calls.of_conn(c.conn)) {
    const Waiter* w = step_.calls.find(wid);
    if (!w || w->request_id != m.request_id()) continue;
    if (w->kind == WaitKind::barrier) break;  // an arrival is not taken back
    if (w->space == proto::SPACE_TORCH) note_unset(c.peer, *w, c.now, true);
    step_.calls.take(wid);
    break;
  }
  step_.reply_ok(c.conn, c.id);
}

void BlockingCalls::answer_wait(ConnId conn, uint64_t id, proto::Space space,
                                const std::string* value_of) {
  proto::Response r;
  r.set_id(id);
  if (value_of) {
    if (const KvStore::Entry* e = step_.store.entry(space, *value_of)) r.add_values(e->value);
  }
  step_.out.send(conn, r);
}

void BlockingCalls::finish(uint64_t wid, Clock::time_point now) {
  const std::optional<Waiter> w = step_.calls.take(wid);
  if (!w) return;
  if (w->kind == WaitKind::wait)
    return answer_wait(w->conn, w->request_id, w->space, w->value ? &w->keys.front() : nullptr);
  proto::Response r;
  r.set_id(w->request_id);
  if (w->kind == WaitKind::get) {
    if (const KvStore::Entry* e = step_.store.entry(w->space, w->keys.front())) {
      r.set_value(e->value);
      r.set_flag(e->once);
    }
    auto p = step_.peers.find(w->conn);
    if (p != step_.peers.end() && w->space == proto::SPACE_STEP)
      mark_fetched(w->conn, p->second, now);
  }
  step_.out.send(w->conn, r);
}

void BlockingCalls::fail(uint64_t wid, proto::Code code, std::string message) {
  const std::optional<Waiter> w = step_.calls.take(wid);
  if (w) step_.reply_error(w->conn, w->request_id, code, std::move(message));
}

void BlockingCalls::key_changed(proto::Space space, const std::string& key, Clock::time_point now) {
  const auto done = step_.calls.key_set(
      space, key, [&](const std::string& k) { return step_.store.contains(space, k); });
  for (uint64_t wid : done) finish(wid, now);
}

void BlockingCalls::expire(Clock::time_point now) {
  while (auto wid = step_.calls.next_due(now))
    fail(*wid, proto::TIMEOUT, step_.calls.timeout_message(*step_.calls.find(*wid)));
}

void BlockingCalls::mark_fetched(ConnId conn, const Peer& p, Clock::time_point now) {
  bool all = p.rank >= 0 && step_.live.mark_fetched(p.rank);
  for (int r : p.node_ranks) {
    if (step_.peers.holds(conn, r) && step_.live.mark_fetched(r)) all = true;
  }
  if (all) step_.phases.reached(Phase::id_fetched_by_all, now);
}

void BlockingCalls::note_unset(const Peer& p, const Waiter& w, Clock::time_point now,
                               bool given_up) {
  std::vector<std::string> missing;
  for (const auto& k : w.keys)
    if (!step_.store.contains(w.space, k)) missing.push_back(k);
  if (missing.empty()) return;
  std::string keys;
  for (size_t i = 0; i < missing.size() && i < 3; ++i)
    keys += (i ? ", " : "") + shown_key(missing[i]);
  if (missing.size() > 3) keys += " and " + std::to_string(missing.size() - 3) + " more";
  const std::string who =
      p.role == proto::ROLE_NODE
          ? "the clients on host " + p.host + " (ranks " + rank_list(p.node_ranks) + ")"
          : step_.peers.describe_peer(p);
  const std::string waited = seconds_text(now - w.since, 1);
  const std::string why =
      step_.abort ? step_.abort->message
                  : "no rank of the step has failed: the one that sets it has not got there "
                    "(its output says where it is)";
  std::string line = "PyTorch's store: " + who + " " +
                     (given_up ? "stopped waiting after " + waited : "waiting " + waited) +
                     " for " + keys + ", never set; " + why;
  // Once per key, kept for the report; printed (srun --dp-verbose shows it)
  // once the step failed, those before then with the failure (abort_job).
  if (step_.report.note_unset_wait(missing.front(), line) && step_.abort) step_.log(line);
}

}  // namespace dp::daemon
