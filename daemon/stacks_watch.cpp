#include "stacks_watch.hpp"

#include <cstdio>

#include "dp/stacks/merge.hpp"
#include "dp/stacks/straggler_samples.hpp"
#include "step_report.hpp"

namespace dp::daemon {

StacksWatch::StacksWatch(std::chrono::milliseconds hang_timeout, bool by_user,
                         long ticks_per_second, Clock::time_point now)
    : hang_timeout_(hang_timeout),
      by_user_(by_user),
      last_round_(now),
      last_hang_round_(now),
      last_block_(now),
      next_block_(now + StragglerReport::kBlock) {
  if (hang_timeout.count() > 0) hang_.emplace(hang_timeout, ticks_per_second);
}

StacksWatch::Due StacksWatch::due(Clock::time_point now, const StragglerReport* s) {
  const bool where = s && s->wants_where() && now >= last_round_ + StragglerReport::kWhereEvery;
  const bool hang = hang_ && now >= last_hang_round_ + stacks::hang_sample_every(hang_timeout_);
  const bool flight =
      hang ||
      (s && now >= last_flight_round_ + (s->wants_flights() ? StragglerReport::kBlock
                                                            : StragglerReport::kFlightProbeEvery));
  if (!where && !hang && !flight) return {};
  last_round_ = now;
  if (hang) last_hang_round_ = now;
  if (flight) last_flight_round_ = now;
  return {true, flight};
}

std::optional<double> StacksWatch::block_end(Clock::time_point now) {
  if (now < next_block_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - last_block_).count();
  last_block_ = now;
  next_block_ = now + StragglerReport::kBlock;
  return seconds;
}

// An NCCL rank waiting in a collective spins (its CPU time grows), so the
// stacks' watch sees work; its flight recorder says where it waits. Its
// verdict comes first; the stacks' view goes with it.
std::optional<StacksWatch::Hang> StacksWatch::judge(const std::vector<stacks::RankStacks>& got,
                                                    const std::vector<stacks::RankFlight>& flights,
                                                    bool complete, Clock::time_point now,
                                                    StragglerReport* s, bool counts_collectives) {
  if (s) {
    for (const auto& r : got) s->on_where(r.rank, stacks::wait_site(r.stacks));
    s->on_flights(flights);
  }
  if (!hang_) return std::nullopt;
  auto v = hang_->observe(now, got, complete);
  if (counts_collectives) return std::nullopt;
  const std::string bound = hang_bound_text(hang_timeout_, by_user_);
  Hang h;
  h.cause.how = AbortCause::How::hang;
  h.cause.when = now;
  if (auto f = stacks::flight_hang(flights, hang_timeout_)) {
    h.cause.rank = f->rank;
    h.cause.host = f->host;
    h.cause.message = f->message + " (flight recorder; " + bound + ")";
    h.which = "flight " + f->which;
    h.view = stacks::format_groups(stacks::merge_stacks(got));
    return h;
  }
  if (!v) return std::nullopt;
  h.cause.rank = v->odd_rank;
  h.cause.host = v->odd_host;
  const double still = std::chrono::duration<double>(v->still).count();
  char head[120];
  std::snprintf(head, sizeof head, "no rank %shas made progress for %.0f s (",
                v->unknown() ? "that could be read " : "", still);
  h.cause.message = head + bound + "): " + v->summary;
  h.which = "stacks #" + std::to_string(++stack_hangs_);
  h.view = v->lines;
  h.may_end = !v->unknown();
  return h;
}

}  // namespace dp::daemon
