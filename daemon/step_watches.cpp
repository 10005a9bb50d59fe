#include "step_watches.hpp"

#include <unistd.h>

#include "stacks_ask.hpp"

namespace dp::daemon {

StepWatches::StepWatches(StepState& step, StepEffects& effects, Clock::time_point now)
    : step_(step),
      effects_(effects),
      watch_(step.cfg.limits.hang_timeout, step.cfg.limits.hang_timeout_by_user,
             ::sysconf(_SC_CLK_TCK), now) {}

void StepWatches::tick(Clock::time_point now) {
  judge_hang(now);
  if (!step_.abort) watch_stacks(now);
  if (!step_.abort) watch_stragglers(now);
}

bool StepWatches::start_round(Clock::time_point now, bool flight) {
  if (rounds_.running()) return true;
  std::map<ConnId, std::string> nodes;
  for (const auto& [conn, p] : step_.peers) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE) continue;
    nodes.emplace(conn,
                  "ranks " + stacks::rank_ranges(p.node_ranks) + " (" + shown_host(p.host) + ")");
  }
  const auto push = rounds_.start(now, flight, nodes);
  for (const auto& [conn, held] : nodes) step_.out.send(conn, *push);
  return !nodes.empty();
}

Clock::time_point StepWatches::ask(StacksRounds::Done done, Clock::time_point now) {
  const bool any = start_round(now, true);
  rounds_.add_caller(std::move(done));
  const auto deadline = rounds_.deadline();
  if (!any) finish(now);
  return deadline;
}

void StepWatches::watch_stacks(Clock::time_point now) {
  // A libdp step's collective counters name its hangs: its ranks are not read.
  if (step_.report.counts_collectives()) return;
  // A straggler suspected or named: a round twice a second says where the
  // others wait. The flight recorders are read for the hang watch's rounds,
  // and for the straggler watch each block once a rank has one (until then
  // every kFlightProbeEvery).
  const StacksWatch::Due due = watch_.due(now, step_.report.stragglers());
  if (!due.round) return;
  if (!start_round(now, due.flight)) {
    rounds_.drop();  // no node agent (ranks that connect themselves): libdp's counters judge
    return;
  }
  rounds_.for_watch();
}

void StepWatches::answer(const Call& c, const proto::StacksAnswer& m) {
  if (m.ask() == rdv::kStacksAtFailure) {
    // A node agent read its survivors before ending them (agent_core's abort).
    if (!step_.abort || c.peer.role != proto::ROLE_NODE) return;
    if (auto lines = rounds_.at_failure(c.conn, c.peer.host, m))
      step_.report.note_failure_stacks(std::move(*lines));
    return;
  }
  if (rounds_.answer(c.conn, c.peer.host, m)) finish(c.now);
}

void StepWatches::expire(Clock::time_point now) {
  if (rounds_.expired(now)) finish(now);
}

void StepWatches::finish(Clock::time_point now) {
  StacksRounds::Finished round = rounds_.finish();
  if (round.for_watch && !step_.abort) {
    if (auto hang = watch_.judge(round.got, round.flights, round.complete, now,
                                 step_.report.stragglers(), step_.report.counts_collectives()))
      hang_found(std::move(hang->cause), hang->which, hang->view, hang->may_end);
  }
  for (auto& done : round.callers) done(round.lines);
}

void StepWatches::ask_samples(ConnId conn) {
  if (!step_.report.stragglers()) return;
  proto::Response push;  // id 0: a push
  push.mutable_sample_ask()->set_every_ms(
      static_cast<uint32_t>(StragglerReport::kLookEvery.count()));
  step_.out.send(conn, push);
}

void StepWatches::watch_stragglers(Clock::time_point now) {
  StragglerReport* s = step_.report.stragglers();
  if (!s) return;
  const std::optional<double> seconds = watch_.block_end(now);
  if (!seconds) return;
  for (const auto& said :
       s->end_block(step_.report.step_seconds(now), *seconds, step_.report.counts_collectives())) {
    if (!said.heard) continue;
    // The flight recorders' verdict says so: it is the one a GPU's work cannot fake.
    const std::string line =
        said.verdict.line +
        (said.source == StragglerReport::Source::flight ? " (flight recorder)" : "");
    step_.out.notice("slurm-dp: step " + step_.cfg.job_id + "." + step_.cfg.step_id +
                     ": straggler: " + line);
    step_.log("straggler: " + line);
  }
}

void StepWatches::judge_hang(Clock::time_point now) {
  auto hang = step_.report.check_hang(now);
  if (!hang) return;
  AbortCause c;
  c.how = AbortCause::How::hang;
  c.rank = hang->rank;
  if (hang->rank >= 0 && hang->rank < step_.cfg.world_size)
    c.host = step_.live.slot(hang->rank).host;
  c.when = now;
  c.message = hang->message;
  hang_found(std::move(c), hang->which, {});
}

void StepWatches::hang_found(AbortCause cause, const std::string& which,
                             const std::vector<std::string>& view, bool may_end) {
  const bool ends = step_.cfg.limits.end_on_hang && may_end;
  if (step_.report.note_hang(which, cause.message, view, cause.when)) {
    step_.out.notice("slurm-dp: step " + step_.cfg.job_id + "." + step_.cfg.step_id +
                     ": hang: " + cause.message +
                     (ends      ? "; the step is ended (--dp-on-hang=end)"
                      : may_end ? "; the step runs on (--dp-on-hang=end ends it)"
                                : "; the step runs on (a rank that cannot be read is never judged "
                                  "stuck)"));
    step_.log(cause.message);
  }
  if (ends) effects_.abort_job(std::move(cause));
}

}  // namespace dp::daemon
