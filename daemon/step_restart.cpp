#include "step_restart.hpp"

namespace dp::daemon {

proto::Response restart_push(const proto::Restart& r) {
  proto::Response push;  // id 0: a push
  *push.mutable_restart() = r;
  return push;
}

proto::Restart StepRestart::start_push(int nr) const {
  proto::Restart start;
  start.set_phase(proto::Restart::START);
  start.set_generation(machine.generation());
  start.set_restart_count(static_cast<uint32_t>(roster.restarts));
  start.set_node_rank(nr);
  for (int r : node_rank_ranks(nr, roster.tasks_per_node)) start.add_node_ranks(r);
  return start;
}

std::optional<proto::Restart> StepRestart::repeat_for(int node) const {
  if (node < 0 || !machine.waiting().count(node)) return std::nullopt;
  if (machine.phase() == RestartMachine::Phase::starting)
    return start_push(roster.node_rank[static_cast<size_t>(node)]);
  if (machine.phase() != RestartMachine::Phase::stopping) return std::nullopt;
  proto::Restart stop;
  stop.set_phase(proto::Restart::STOP);
  stop.set_generation(machine.generation());
  return stop;
}

proto::Restart StepRestart::done_push() const {
  proto::Restart done;
  done.set_phase(proto::Restart::DONE);
  done.set_generation(machine.generation());
  return done;
}

std::set<int> StepRestart::live_nodes(const StepPeers& peers) const {
  std::set<int> live;
  for (const auto& [conn, p] : peers)
    if (p.state == PeerState::ready && p.role == proto::ROLE_NODE && p.node >= 0 &&
        p.node < roster.nodes() && roster.node_rank[static_cast<size_t>(p.node)] != Roster::kLost)
      live.insert(p.node);
  return live;
}

std::optional<AbortCause> StepRestart::unheard_node_loss(const StepPeers& peers,
                                                         const Liveness& live,
                                                         const std::set<int>& nodes_left,
                                                         Clock::time_point now) const {
  for (int node = 0; node < roster.nodes(); ++node) {
    const int nr = roster.node_rank[static_cast<size_t>(node)];
    if (nr < 0 || peers.node_conn(node) != 0) continue;
    AbortCause lost;
    lost.how = AbortCause::How::node_lost;
    lost.node = node;
    lost.when = now;
    lost.peer_closed = nodes_left.count(node) > 0;
    const auto ranks = node_rank_ranks(nr, roster.tasks_per_node);
    lost.rank = ranks.empty() ? -1 : ranks.front();
    // Its ranks' slots keep the host its agent last named in its hello.
    lost.host = ranks.empty() || live.slot(ranks.front()).host.empty()
                    ? "node " + std::to_string(node)
                    : live.slot(ranks.front()).host;
    lost.message = "the node agent on host " + lost.host +
                   " left without its loss being heard, and its ranks cannot start again";
    return lost;
  }
  return std::nullopt;
}

std::optional<AbortCause> StepRestart::spare_loss(const Peer& p) const {
  if (p.role != proto::ROLE_NODE || p.node < 0 || p.node >= roster.nodes()) return std::nullopt;
  const int held = roster.node_rank[static_cast<size_t>(p.node)];
  if (held == Roster::kLost || done_pushed) return std::nullopt;
  AbortCause lost;
  lost.how = AbortCause::How::node_lost;
  lost.node = p.node;
  lost.host = p.host;
  lost.peer_closed = true;  // its link's end, heard
  const auto ranks = node_rank_ranks(held, roster.tasks_per_node);
  lost.rank = ranks.empty() ? -1 : ranks.front();
  lost.message =
      "the node agent on host " + p.host +
      (held < 0 ? " (a spare)" : " (the spare taking node rank " + std::to_string(held) + ")") +
      " lost its connection to the rendezvous daemon";
  return lost;
}

AbortCause StepRestart::lost_nodes_done() const {
  AbortCause done;
  done.how = AbortCause::How::explicit_abort;
  done.message = "the step completed after " + std::to_string(roster.restarts) + " restart(s); " +
                 std::to_string(roster.lost()) + " lost node(s) still hold tasks in Slurm's eyes";
  return done;
}

}  // namespace dp::daemon
