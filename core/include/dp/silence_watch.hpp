// How long a peer that pings every second has been silent: the step's
// daemon as libdp's client and the node agent hear it, the agent as a rank
// hears it. A process that was itself stopped (a suspended job) wakes late,
// and the peer's silence meanwhile is not the peer's fault: such a wake
// counts as hearing it. Pure: the caller brings the clock.
#pragma once

#include <chrono>

namespace dp {

class SilenceWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // limit: silent this long, the peer is gone (0: no bound); wake_every: how
  // often the caller wakes (its heartbeat), so a wake a second later than
  // that means this process was stopped.
  SilenceWatch(Clock::duration limit, Clock::duration wake_every, Clock::time_point now)
      : limit_(limit), wake_every_(wake_every), last_heard_(now), last_wake_(now) {}

  // Anything from the peer: a reply, a push, its keepalive.
  void heard(Clock::time_point now) { last_heard_ = now; }
  // Each wake of the caller's loop.
  void woke(Clock::time_point now) {
    if (now - last_wake_ >= wake_every_ + std::chrono::seconds(1)) last_heard_ = now;
    last_wake_ = now;
  }

  bool bounded() const { return limit_.count() > 0; }
  Clock::duration limit() const { return limit_; }
  Clock::duration silent(Clock::time_point now) const { return now - last_heard_; }
  // The peer counts as gone: silent for the whole limit.
  bool over(Clock::time_point now) const { return bounded() && silent(now) >= limit_; }
  // When over() turns true without a word from the peer; none without a bound.
  Clock::time_point deadline() const {
    return bounded() ? last_heard_ + limit_ : Clock::time_point::max();
  }

 private:
  Clock::duration limit_, wake_every_;
  Clock::time_point last_heard_, last_wake_;
};

}  // namespace dp
