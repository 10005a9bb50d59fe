// One restart's clock: when the loss happened and the restart was decided,
// when every program stopped and started again, when the programs met
// (every PyTorch store client up, or libdp's ranks initialised) and when the
// first step came; the restart's line reads its five phases from here. And
// whether this start's programs have met: a failure before that, or within
// kAtOnceMs of it, is "at once" (the node's fault when it repeats). Pure;
// the broker feeds it the events (restart_runner.cpp).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "dp/spares.hpp"
#include "liveness.hpp"

namespace dp::daemon {

class RestartTimes {
 public:
  // After the rendezvous, how long a step whose ranks report no counters
  // (no libdp) is given before its line goes out without a first step.
  static constexpr std::chrono::seconds kFirstStepWait{2};
  // A started restart's line goes out after this at the latest.
  static constexpr std::chrono::seconds kLineWait{60};

  explicit RestartTimes(int world_size) : world_(world_size) {}

  // A restart decided at `now` for a loss at `loss_at` (a lost node's last
  // word, or now): a new record, its later phases unknown.
  void open(Clock::time_point loss_at, Clock::time_point now);
  // A further loss joins the restart under way: its record stays (open).
  void keep_open() { open_ = true; }
  bool is_open() const { return open_; }

  // Every program stopped: the programs' count of store clients begins anew
  // and they have not met.
  void stopped(Clock::time_point now);
  void started(Clock::time_point now) { started_at_ = now; }
  // An agent's ADD announced `n` PyTorch store clients up; once the world's
  // are, the programs met.
  void store_clients(uint32_t n, Clock::time_point now);
  // Every rank's libdp reported itself initialised (StepReport::resumed).
  void initialized(Clock::time_point now) { met(now); }

  // A program failure at `now` came before the programs met, or soon after.
  bool at_once(Clock::time_point now) const;
  // The programs met and have run kAtOnceMs since.
  bool settled(Clock::time_point now) const { return met_at_ && !at_once(now); }

  // The open record's line is due at `now`: a first step (`stepped`), or
  // kFirstStepWait after the rendezvous where no counters come
  // (`reports`: libdp's ranks report steps), or kLineWait after the start.
  bool due(Clock::time_point now, bool stepped, bool reports) const;
  // Closes the open record: its phases in ms (-1: not reached), the first
  // step's only when `stepped`. Nothing when none is open.
  std::optional<std::array<int64_t, kRestartPhases>> close(Clock::time_point now, bool stepped);

 private:
  void met(Clock::time_point now);

  int world_;
  bool open_ = false;
  Clock::time_point loss_at_{}, decided_at_{}, stopped_at_{}, started_at_{}, rendezvous_at_{};
  int64_t clients_ = 0;  // PyTorch store clients up since the programs stopped
  std::optional<Clock::time_point> met_at_;
};

}  // namespace dp::daemon
