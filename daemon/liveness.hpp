// Which ranks of the step are alive, judged the way a production cluster
// needs. A rank whose connection drops without goodbye is dead at once.
// Silence is weaker evidence: Slurm suspends a job by stopping all its tasks
// (scontrol suspend, gang scheduling, PreemptMode=SUSPEND), the daemon's own
// host may be stopped with them, and a debugger stops processes too. So a
// silent rank is judged only
//   - after the server drained its input (heartbeats may be waiting),
//   - over time the daemon itself was running (a gap between ticks means the
//     daemon was stopped: everyone's silence is forgiven),
//   - while some other rank is heard: when every rank is silent together the
//     step is suspended, not dead, and the first rank heard again resumes it
//     with a fresh limit for everyone.
// Pure logic over the clock the server passes in.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "abort_cause.hpp"

namespace dp::daemon {

using ConnId = uint64_t;

// What the daemon knows about one rank of the step.
struct RankSlot {
  ConnId conn = 0;       // its live connection; 0: none
  bool hello = false;    // ever said hello
  bool fetched = false;  // ever completed a get (start-up phase)
  bool goodbye = false;  // its last connection ended with goodbye
  std::string host;      // as it said in hello (printable)
  Clock::time_point last_heard{};
};

class Liveness {
 public:
  // A gap this long between two ticks means the daemon was stopped.
  static constexpr std::chrono::milliseconds kStopGap{1'500};
  // No rank heard for this long (three client heartbeats): the step is suspended.
  static constexpr std::chrono::milliseconds kAllSilent{3'000};

  Liveness(int world_size, std::chrono::milliseconds silence_limit, Clock::time_point now);

  RankSlot& slot(int rank) { return ranks_[static_cast<size_t>(rank)]; }
  const RankSlot& slot(int rank) const { return ranks_[static_cast<size_t>(rank)]; }
  int world_size() const { return static_cast<int>(ranks_.size()); }

  void connected(int rank, ConnId conn, const std::string& host, Clock::time_point now);
  void disconnected(int rank, ConnId conn, bool goodbye);
  // The rank's connection `from` was replaced by `to` (its node agent
  // reconnected); a rank no longer held by `from` stays as it is.
  void moved(int rank, ConnId from, ConnId to, Clock::time_point now);
  // The step restarted in place: the rank is held by `conn` (its node's
  // agent, maybe a spare's), has not left, and is heard now.
  void restarted(int rank, ConnId conn, const std::string& host, Clock::time_point now);
  // Anything received from the rank (a heartbeat or a request). Ends a suspension.
  void heard(int rank, Clock::time_point now);
  // Once per tick, before anything is judged: notices the daemon's own stop gaps.
  void tick(Clock::time_point now);
  // Connected ranks silent beyond the limit while the step is not suspended.
  // Empty right after a stop gap (the next tick forgives it).
  std::vector<int> silent(Clock::time_point now) const;
  bool suspended() const { return suspended_; }
  std::chrono::milliseconds silence_limit() const { return limit_; }

  int connected_count() const { return connected_; }
  int seen_count() const { return seen_; }
  int goodbye_count() const { return goodbyes_; }
  // Marks the rank's first completed get; true when it was the last rank to get one.
  bool mark_fetched(int rank);
  uint64_t stop_gaps() const { return stop_gaps_; }
  uint64_t suspensions() const { return suspensions_; }

 private:
  void forgive(Clock::time_point now);

  std::vector<RankSlot> ranks_;
  std::chrono::milliseconds limit_;
  Clock::time_point last_tick_;
  Clock::time_point last_any_heard_;
  bool suspended_ = false;
  Clock::time_point suspended_since_{};
  int connected_ = 0, seen_ = 0, goodbyes_ = 0, fetched_ = 0;
  uint64_t stop_gaps_ = 0, suspensions_ = 0;
};

}  // namespace dp::daemon
