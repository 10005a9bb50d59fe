#include "restart_times.hpp"

#include <algorithm>

namespace dp::daemon {
namespace {

int64_t ms_between(Clock::time_point from, Clock::time_point to) {
  if (from == Clock::time_point{} || to == Clock::time_point{}) return -1;
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count());
}

}  // namespace

void RestartTimes::open(Clock::time_point loss_at, Clock::time_point now) {
  open_ = true;
  loss_at_ = std::min(loss_at, now);
  decided_at_ = now;
  stopped_at_ = started_at_ = rendezvous_at_ = Clock::time_point{};
}

void RestartTimes::stopped(Clock::time_point now) {
  stopped_at_ = now;
  clients_ = 0;
  met_at_.reset();
}

void RestartTimes::store_clients(uint32_t n, Clock::time_point now) {
  clients_ += n;
  if (clients_ >= world_) met(now);
}

void RestartTimes::met(Clock::time_point now) {
  if (!met_at_) met_at_ = now;
  if (open_ && rendezvous_at_ == Clock::time_point{}) rendezvous_at_ = now;
}

bool RestartTimes::at_once(Clock::time_point now) const {
  return !met_at_ || now - *met_at_ < std::chrono::milliseconds(kAtOnceMs);
}

bool RestartTimes::due(Clock::time_point now, bool stepped, bool reports) const {
  if (!open_) return false;
  const bool met = rendezvous_at_ != Clock::time_point{};
  const bool started = started_at_ != Clock::time_point{};
  return stepped || (met && !reports && now - rendezvous_at_ >= kFirstStepWait) ||
         (started && now - started_at_ >= kLineWait);
}

std::optional<std::array<int64_t, kRestartPhases>> RestartTimes::close(Clock::time_point now,
                                                                       bool stepped) {
  if (!open_) return std::nullopt;
  open_ = false;
  const bool started = started_at_ != Clock::time_point{};
  const bool met = rendezvous_at_ != Clock::time_point{};
  return std::array<int64_t, kRestartPhases>{
      ms_between(loss_at_, decided_at_), ms_between(decided_at_, stopped_at_),
      ms_between(stopped_at_, started_at_),
      ms_between(started ? started_at_ : stopped_at_, rendezvous_at_),
      stepped && met ? ms_between(rendezvous_at_, now) : -1};
}

}  // namespace dp::daemon
