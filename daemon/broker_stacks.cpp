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
#include "dp/stacks/straggler_samples.hpp"
#include "stacks_ask.hpp"

namespace dp::daemon {

bool Broker::start_stacks_round(Clock::time_point now, bool flight) {
  if (rounds_.running()) return true;
  std::map<ConnId, std::string> nodes;
  for (const auto& [conn, p] : peers_) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE) continue;
    nodes.emplace(conn, "ranks " + stacks::rank_ranges(p.node_ranks) + " (" +
                            (p.host.empty() ? "?" : p.host) + ")");
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
  const StragglerReport* s = report_.stragglers();
  const bool where =
      s && s->wants_where() && now >= last_watch_round_ + StragglerReport::kWhereEvery;
  const bool hang =
      hang_watch_ && now >= last_hang_round_ + stacks::hang_sample_every(cfg_.limits.hang_timeout);
  const bool flight =
      hang ||
      (s && now >= last_flight_round_ + (s->wants_flights() ? StragglerReport::kBlock
                                                            : StragglerReport::kFlightProbeEvery));
  if (!where && !hang && !flight) return;
  last_watch_round_ = now;
  if (hang) last_hang_round_ = now;
  if (flight) last_flight_round_ = now;
  if (!start_stacks_round(now, flight)) {
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
  if (round.for_watch && !abort_) judge_stacks(round.got, round.flights, round.complete, now);
  for (auto& done : round.callers) done(round.lines);
}

// An NCCL rank waiting in a collective spins (its CPU time grows), so the
// stacks' watch sees work; its flight recorder says where it waits. Its
// verdict comes first; the stacks' view goes with it.
void Broker::judge_stacks(const std::vector<stacks::RankStacks>& got,
                          const std::vector<stacks::RankFlight>& flights, bool complete,
                          Clock::time_point now) {
  if (auto* s = report_.stragglers()) {
    for (const auto& r : got) s->on_where(r.rank, stacks::wait_site(r.stacks));
    s->on_flights(flights);
  }
  if (!hang_watch_) return;
  auto v = hang_watch_->observe(now, got, complete);
  if (report_.counts_collectives()) return;
  const std::string bound =
      hang_bound_text(cfg_.limits.hang_timeout, cfg_.limits.hang_timeout_by_user);
  AbortCause c;
  c.how = AbortCause::How::hang;
  c.when = now;
  if (auto f = stacks::flight_hang(flights, cfg_.limits.hang_timeout)) {
    c.rank = f->rank;
    c.host = f->host;
    c.message = f->message + " (flight recorder; " + bound + ")";
    return hang_found(std::move(c), "flight " + f->which,
                      stacks::format_groups(stacks::merge_stacks(got)));
  }
  if (!v) return;
  c.rank = v->odd_rank;
  c.host = v->odd_host;
  const double still = std::chrono::duration<double>(v->still).count();
  char head[120];
  std::snprintf(head, sizeof head, "no rank %shas made progress for %.0f s (",
                v->unknown() ? "that could be read " : "", still);
  c.message = head + bound + "): " + v->summary;
  // Ranks that could not be read are named, never judged stuck: the step runs on.
  hang_found(std::move(c), "stacks #" + std::to_string(++stack_hangs_), v->lines, !v->unknown());
}

}  // namespace dp::daemon
