#include "node_agents.hpp"

#include <algorithm>

#include "dp/shown_value.hpp"
#include "dp/step_signals.hpp"

namespace dp::daemon {
Result<void> NodeAgents::check_hello(const proto::Hello& h) const {
  const ConnId predecessor = step_.peers.node_predecessor(h, 0, step_.restarts.has_value());
  const int most = std::max(step_.cfg.world_size, step_.cfg.limits.nodes);
  if (predecessor == 0 && step_.count.nodes >= most) {
    return make_error(Errc::limit, "too many node agents connected (one per node, at most " +
                                       std::to_string(most) + ")");
  }
  if (step_.restarts) {
    const Roster& roster = step_.restarts->roster;
    if (h.rank() < 0 || h.rank() >= roster.nodes())
      return make_error(Errc::invalid_argument, "hello: node index " + std::to_string(h.rank()) +
                                                    " is not one of the step's " +
                                                    std::to_string(roster.nodes()) + " nodes");
    if (roster.node_rank[static_cast<size_t>(h.rank())] == Roster::kLost)
      return make_error(Errc::aborted,
                        "node " + shown_value(h.host(), 255) +
                            " was lost and a spare (or the step's end) took its place; its "
                            "tasks end");
    if (h.node_ranks().empty() && roster.node_rank[static_cast<size_t>(h.rank())] >= 0 &&
        predecessor == 0)
      return make_error(Errc::invalid_argument,
                        "hello: node " + std::to_string(h.rank()) + " holds ranks, not a spare");
  }
  if (h.node_ranks().empty() && !step_.restarts)
    return make_error(Errc::invalid_argument, "hello: a node agent must name at least one rank");
  int prev = -1;
  for (int r : h.node_ranks()) {
    if (r < 0 || r >= step_.cfg.world_size) {
      return make_error(Errc::invalid_argument, "hello: node rank " + std::to_string(r) +
                                                    " is outside 0.." +
                                                    std::to_string(step_.cfg.world_size - 1));
    }
    if (r <= prev) {
      return make_error(Errc::invalid_argument,
                        "hello: node ranks must be ascending without repeats (" +
                            std::to_string(r) + " after " + std::to_string(prev) + ")");
    }
    prev = r;
    if (step_.live.slot(r).conn != 0 && step_.live.slot(r).conn != predecessor) {
      return make_error(Errc::conflict, "hello: rank " + std::to_string(r) +
                                            " is already connected from host " +
                                            shown_host(step_.live.slot(r).host) +
                                            ": two node agents (or a node agent and a task) "
                                            "claim the same rank");
    }
  }
  return {};
}

void NodeAgents::take_over(ConnId old, ConnId conn, Clock::time_point now) {
  auto it = step_.peers.find(old);
  if (it == step_.peers.end()) return;
  const std::vector<int> ranks = it->second.node_ranks;
  const std::string host = it->second.host;
  for (int r : ranks) step_.live.moved(r, old, conn, now);
  effects_.forget_peer(old, false);
  step_.out.close(old);
  ++step_.count.rank_peers;
  ++step_.count.nodes;
  ++step_.count.relinks;
  step_.log("the node agent on host " + shown_host(host) + " (ranks " + ranks_text(ranks) +
            ") reconnected after an outage; its ranks keep their places and its old connection "
            "is closed");
}

void NodeAgents::register_ranks(ConnId conn, const Peer& p, Clock::time_point now) {
  if (p.role == proto::ROLE_AGENT) {
    ++step_.count.agents;
    return;
  }
  ++step_.count.rank_peers;
  if (p.role == proto::ROLE_NODE) ++step_.count.nodes;
  const std::vector<int> own{p.rank};
  const std::vector<int>& ranks = p.role == proto::ROLE_NODE ? p.node_ranks : own;
  for (int r : ranks) {
    step_.live.connected(r, conn, p.host, now);
    step_.report.on_hello(r, p.host, now);
  }
  step_.phases.reached(Phase::first_hello, now);
  if (step_.live.seen_count() == step_.cfg.world_size) step_.phases.reached(Phase::all_hellos, now);
}

void NodeAgents::heartbeat(const Call& c, const proto::Heartbeat& m) {
  // Each node's count so far: a node that reconnects sends on from it.
  if (auto p = step_.peers.find(c.conn); p != step_.peers.end() && m.store_strangers() > 0)
    store_strangers_[p->second.host] = m.store_strangers();
  for (const proto::RankProgress& rp : m.ranks()) {
    if (!step_.peers.holds(c.conn, rp.rank())) continue;
    step_.live.heard(rp.rank(), c.now);
    if (rp.has_progress()) step_.report.on_progress(rp.rank(), rp.progress(), c.now);
  }
  // The straggler watch's looks: ranks as the agent reads them (a launcher's
  // workers carry torch's), like its stacks answers.
  if (auto* s = step_.report.stragglers())
    for (const proto::RankSamples& rs : m.samples()) s->on_looks(rs, c.peer.host);
}

void NodeAgents::rank_goodbye(ConnId conn, int rank, const proto::Progress* final_counters,
                              Clock::time_point now) {
  // The final counters, so even a short step reports its progress.
  if (final_counters) step_.report.on_progress(rank, *final_counters, now);
  step_.report.on_goodbye(rank);
  step_.live.disconnected(rank, conn, /*goodbye=*/true);
}

void NodeAgents::goodbye(const Call& c, const proto::Goodbye& m) {
  if (m.has_rank()) {
    if (!step_.peers.holds(c.conn, m.rank())) {
      return step_.reply_error(
          c.conn, c.id, proto::INVALID_ARGUMENT,
          "goodbye: rank " + std::to_string(m.rank()) + " is not a live rank of this node agent");
    }
    rank_goodbye(c.conn, m.rank(), m.has_progress() ? &m.progress() : nullptr, c.now);
    return step_.reply_ok(c.conn, c.id);
  }
  for (int r : c.peer.node_ranks) {
    if (step_.peers.holds(c.conn, r)) rank_goodbye(c.conn, r, nullptr, c.now);
  }
  step_.reply_ok(c.conn, c.id);
  if (c.peer.node >= 0) step_.nodes_left.insert(c.peer.node);  // its agent ends: its keepers too
  effects_.forget_peer(c.conn, /*goodbye=*/true);
  step_.out.close(c.conn);
}

namespace {
// How the task ended; a launcher's failed worker (its torch RANK) after the
// launcher's own rank, so "first failure: rank R (host H)" still leads.
std::string rank_lost_text(const proto::RankLost& m) {
  std::string how = "is gone";
  if (m.has_signal()) {
    how = "was killed by signal " + std::to_string(m.signal());
  } else if (m.has_exit_code()) {
    how = "exited with code " + std::to_string(m.exit_code());
  } else if (!m.detail().empty()) {
    how = "lost its local connection";
  }
  if (m.has_worker_rank())
    return "is failing: its worker rank " + std::to_string(m.worker_rank()) + " " + how +
           " (reported by its node agent before the launcher ended)";
  // The agent's detail only where the exit status did not say how.
  const bool said = m.has_signal() || m.has_exit_code();
  const std::string detail = said || m.detail().empty() ? "" : ": " + shown_value(m.detail(), 256);
  return how + " without saying goodbye (reported by its node agent" + detail + ")";
}
}  // namespace

void NodeAgents::rank_lost(const Call& c, const proto::RankLost& m) {
  const int r = m.rank();
  const auto& mine = c.peer.node_ranks;
  if (c.peer.role != proto::ROLE_NODE || !std::binary_search(mine.begin(), mine.end(), r)) {
    return step_.reply_error(
        c.conn, c.id, proto::INVALID_ARGUMENT,
        "rank_lost: rank " + std::to_string(r) + " is not a rank of this node agent");
  }
  // A task that exits after its goodbye ended its part of the step: Slurm reports its status.
  if (!step_.peers.holds(c.conn, r)) return step_.reply_ok(c.conn, c.id);
  AbortCause cause;
  cause.how = AbortCause::How::rank_lost;
  cause.rank = r;
  cause.host = c.peer.host;
  cause.node = c.peer.node;
  cause.when = c.now;
  if (m.has_exit_code()) cause.exit_code = m.exit_code();
  if (m.has_signal()) cause.signal = m.signal();
  if (m.has_worker_rank()) cause.worker_rank = m.worker_rank();
  // The agent saw Slurm's signal reach the node before the task ended by it.
  if (m.has_user_signal() && is_step_signal(m.user_signal())) {
    cause.how = AbortCause::How::user_signal;
    cause.user_signal = m.user_signal();
  }
  cause.message =
      "rank " + std::to_string(r) + " (host " + shown_host(c.peer.host) + ") " + rank_lost_text(m);
  // Its task itself ended (a step that restarts: the program's keeper), and
  // Slurm starts no task again: the node can no longer hold its ranks.
  if (m.task_gone()) {
    cause.how = AbortCause::How::node_lost;
    cause.message = "rank " + std::to_string(r) + " (host " + shown_host(c.peer.host) +
                    ")'s task ended for good (" + shown_value(m.detail(), 256) + "), so node " +
                    shown_host(c.peer.host) + " can no longer hold its ranks";
  }
  step_.live.disconnected(r, c.conn, /*goodbye=*/false);
  effects_.abort_job(std::move(cause));
  step_.reply_ok(c.conn, c.id);
}

void NodeAgents::step_signal(const Call& c, const proto::StepSignal& m) {
  const int sig = m.signal();
  if (c.peer.role != proto::ROLE_NODE || !is_step_signal(sig)) {
    if (c.id != 0) {
      step_.reply_error(
          c.conn, c.id, proto::INVALID_ARGUMENT,
          "step_signal: only a node agent reports a step signal (HUP, INT, TERM, USR1, ...)");
    }
    return;
  }
  // Every node reports one delivery within moments: the first names it (and
  // logs it once, not once per node).
  const bool same_delivery = step_signal_ && step_signal_->sig == sig &&
                             c.now - step_signal_->at < std::chrono::seconds(5);
  const bool notice_after_end =
      step_signal_ && signal_ends_step(step_signal_->sig) && !signal_ends_step(sig);
  if (same_delivery || notice_after_end) return;
  step_.log("SIG" + signal_name(sig) + " from Slurm reached host " + shown_host(c.peer.host));
  step_signal_ = SignalSeen{sig, c.peer.host, c.now};
}

void NodeAgents::explain_by_user_signal(AbortCause& c, Clock::time_point now) const {
  if (!step_signal_ || c.how != AbortCause::How::node_lost) return;
  const ReceivedSignal got{step_signal_->sig, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  now - step_signal_->at)};
  const auto by = user_signal_cause(got, std::nullopt);
  if (!by) return;
  c.how = AbortCause::How::user_signal;
  c.user_signal = *by;
  c.message = "the node agent on host " + shown_host(c.host) + " ended with the step's tasks " +
              std::to_string(got.before_end.count()) + " ms after SIG" + signal_name(*by) +
              " from Slurm reached host " + shown_host(step_signal_->host);
}

void NodeAgents::store_refused(const Call& c, const proto::StoreRefused& m) {
  if (c.peer.role != proto::ROLE_NODE) {
    if (c.id != 0)
      step_.reply_error(c.conn, c.id, proto::INVALID_ARGUMENT,
                        "store_refused: only a node agent serves a PyTorch store");
    return;
  }
  uint64_t& count = store_refused_[c.peer.host];
  count = std::max(count, m.refused());  // a count so far: one sent again changes nothing
  if (m.line().empty()) return;
  const std::string line =
      "PyTorch's store on host " + c.peer.host + ": " + shown_value(m.line(), 1024);
  if (step_.report.note_store_refusal(line)) step_.log(line);
}

namespace {
uint64_t all_hosts(const std::map<std::string, uint64_t>& by_host) {
  uint64_t n = 0;
  for (const auto& [host, count] : by_host) n += count;
  return n;
}
}  // namespace

uint64_t NodeAgents::strangers_refused() const { return all_hosts(store_strangers_); }
uint64_t NodeAgents::requests_refused() const { return all_hosts(store_refused_); }

}  // namespace dp::daemon
