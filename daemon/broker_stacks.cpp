// Stacks rounds: dp-top --stacks, the hang watch, and where the others wait
// for a straggler. The node agents read
// their own ranks (only they run as the job's user beside them), the daemon
// merges. Nothing here blocks: the ask is a push, answers are requests
// without reply, and a round ends when the last node answered or at its
// deadline (the server's tick).
#include <algorithm>
#include <cstdio>

#include "broker.hpp"
#include "dp/stacks/straggler_samples.hpp"
#include "flight_message.hpp"
#include "stacks_message.hpp"

namespace dp::daemon {

bool Broker::start_stacks_round(Clock::time_point now, bool flight) {
  if (stacks_) return true;
  StacksRound round;
  round.ask = next_stacks_ask_++;
  round.deadline = now + kStacksWait;
  proto::Response push;
  push.mutable_stacks_ask()->set_ask(round.ask);
  push.mutable_stacks_ask()->set_flight(flight);
  // The agent's own deadline leaves room for its answer to travel.
  push.mutable_stacks_ask()->set_deadline_ms(static_cast<uint32_t>(kStacksWait.count() * 3 / 4));
  for (const auto& [conn, p] : peers_) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE) continue;
    round.waiting.emplace(conn, "ranks " + stacks::rank_ranges(p.node_ranks) + " (" +
                                    (p.host.empty() ? "?" : p.host) + ")");
    out_.send(conn, push);
  }
  const bool any = !round.waiting.empty();
  stacks_ = std::move(round);
  return any;
}

Clock::time_point Broker::ask_stacks(StacksDone done, Clock::time_point now) {
  const bool any = start_stacks_round(now, true);
  stacks_->callers.push_back(std::move(done));
  const auto deadline = stacks_->deadline;
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
    stacks_.reset();  // no node agent (ranks that connect themselves): libdp's counters judge
    return;
  }
  stacks_->for_watch = true;
}

void Broker::op_stacks_answer(const Call& c, const proto::StacksAnswer& m) {
  if (m.ask() == rdv::kStacksAtFailure) return failure_stacks(c, m);
  if (!stacks_ || m.ask() != stacks_->ask || !stacks_->waiting.erase(c.conn)) return;
  // Not checked against the node's ranks: a launcher's workers carry
  // torch's ranks, which are not the Slurm tasks the node's hello claimed.
  std::vector<int> ranks;
  for (const auto& r : m.ranks()) {
    stacks_->got.push_back(rdv::rank_stacks(r, c.peer.host));
    ranks.push_back(r.rank());
  }
  for (const auto& f : m.flights()) stacks_->flights.push_back(rdv::rank_flight(f, c.peer.host));
  std::sort(ranks.begin(), ranks.end());
  stacks_->read_on.push_back(
      (c.peer.host.empty() ? "?" : c.peer.host) + " (" +
      (ranks.empty() ? "no rank running" : "ranks " + stacks::rank_ranges(ranks)) + ")");
  if (stacks_->waiting.empty()) finish_stacks(c.now);
}

// A node agent read its survivors before ending them (agent_core's abort):
// each node's answer once, merged with the others' into the failure's record.
void Broker::failure_stacks(const Call& c, const proto::StacksAnswer& m) {
  if (!abort_ || c.peer.role != proto::ROLE_NODE || !failure_read_.insert(c.conn).second) return;
  for (const auto& r : m.ranks()) failure_got_.push_back(rdv::rank_stacks(r, c.peer.host));
  report_.note_failure_stacks(stacks::format_groups(stacks::merge_stacks(failure_got_)));
}

void Broker::expire_stacks(Clock::time_point now) {
  if (stacks_ && now >= stacks_->deadline) finish_stacks(now);
}

void Broker::finish_stacks(Clock::time_point now) {
  StacksRound round = std::move(*stacks_);
  stacks_.reset();
  if (round.for_watch && !abort_)
    judge_stacks(round.got, round.flights, round.waiting.empty(), now);
  if (round.callers.empty()) return;
  std::vector<std::string> lines;
  if (round.got.empty() && round.waiting.empty())
    lines.push_back("no node agent is connected: no rank to read");
  else lines = stacks::format_groups(stacks::merge_stacks(round.got));
  // NCCL ranks' places (a rank without a pipe is no NCCL program: not listed).
  std::vector<stacks::RankFlight> nccl;
  for (const auto& f : round.flights)
    if (f.unread.rfind("no pipe", 0) != 0) nccl.push_back(f);
  for (auto& l : stacks::flight_lines(nccl)) lines.push_back(std::move(l));
  if (!round.read_on.empty()) {
    std::sort(round.read_on.begin(), round.read_on.end());  // by host, not by arrival
    std::string line = "read on";
    for (size_t i = 0; i < round.read_on.size(); ++i) line += (i ? ", " : " ") + round.read_on[i];
    lines.push_back(line);
  }
  for (const auto& [conn, who] : round.waiting)
    lines.push_back(who + ": no answer within " + std::to_string(kStacksWait.count() / 1000) +
                    " s");
  for (auto& done : round.callers) done(lines);
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
