// Stacks rounds (stacks_rounds.hpp): dp-top --stacks, the hang watch, and
// where the others wait for a straggler. The node agents read their own
// ranks (only they run as the job's user beside them), the daemon merges.
// Nothing here blocks: the ask is a push, answers are requests without
// reply, and a round ends when the last node answered or at its deadline
// (the server's tick). Here: whom to ask, when the watch asks, and what a
// round's stacks and flight recorders say of a hang.
#include <algorithm>
#include <cstdio>

#include "broker.hpp"
#include "stacks_ask.hpp"

namespace dp::daemon {

bool Broker::start_stacks_round(Clock::time_point now, bool flight) {
  if (rounds_.running()) return true;
  std::map<ConnId, std::string> nodes;
  for (const auto& [conn, p] : peers_) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE) continue;
    nodes.emplace(conn,
                  "ranks " + stacks::rank_ranges(p.node_ranks) + " (" + shown_host(p.host) + ")");
  }
  const auto push = rounds_.start(now, flight, nodes);
  for (const auto& [conn, held] : nodes) out_.send(conn, *push);
  return !nodes.empty();
}

Clock::time_point Broker::ask_stacks(StacksDone done, Clock::time_point now) {
  const bool any = start_stacks_round(now, true);
  rounds_.add_caller(std::move(done));
  const auto deadline = rounds_.deadline();
  if (!any) finish_stacks(now);
  return deadline;
}

void Broker::watch_stacks(Clock::time_point now) {
  // A libdp step's collective counters name its hangs: its ranks are not read.
  if (report_.counts_collectives()) return;
  // A straggler suspected or named: a round twice a second says where the
  // others wait. The flight recorders are read for the hang watch's rounds,
  // and for the straggler watch each block once a rank has one (until then
  // every kFlightProbeEvery).
  const StacksWatch::Due due = watch_.due(now, report_.stragglers());
  if (!due.round) return;
  if (!start_stacks_round(now, due.flight)) {
    rounds_.drop();  // no node agent (ranks that connect themselves): libdp's counters judge
    return;
  }
  rounds_.for_watch();
}

void Broker::op_stacks_answer(const Call& c, const proto::StacksAnswer& m) {
  if (m.ask() == rdv::kStacksAtFailure) {
    // A node agent read its survivors before ending them (agent_core's abort).
    if (!abort_ || c.peer.role != proto::ROLE_NODE) return;
    if (auto lines = rounds_.at_failure(c.conn, c.peer.host, m))
      report_.note_failure_stacks(std::move(*lines));
    return;
  }
  if (rounds_.answer(c.conn, c.peer.host, m)) finish_stacks(c.now);
}

void Broker::expire_stacks(Clock::time_point now) {
  if (rounds_.expired(now)) finish_stacks(now);
}

void Broker::finish_stacks(Clock::time_point now) {
  StacksRounds::Finished round = rounds_.finish();
  if (round.for_watch && !abort_) {
    if (auto hang = watch_.judge(round.got, round.flights, round.complete, now,
                                 report_.stragglers(), report_.counts_collectives()))
      hang_found(std::move(hang->cause), hang->which, hang->view, hang->may_end);
  }
  for (auto& done : round.callers) done(round.lines);
}

}  // namespace dp::daemon
