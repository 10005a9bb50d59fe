// This process's progress in its collectives, for the daemon's hang and
// straggler detection. The op queue's worker counts each op with
// two clock reads and a few relaxed atomics; the client's I/O thread reads
// the counters into every heartbeat (about one a second). No message per op.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace dp::proto {
class Progress;
}

namespace dp::detail {

class RankProgress {
 public:
  using Clock = std::chrono::steady_clock;
  // DP_PROGRESS=off turns the accounting off (heartbeats then carry none).
  bool enabled() const noexcept { return enabled_; }

  void op_begin() noexcept;
  void op_end() noexcept;
  void init_begin() noexcept;
  void init_connected() noexcept;
  void init_done() noexcept;
  // false when off: the heartbeat then carries no progress.
  bool fill(proto::Progress& out) const;

  RankProgress();

 private:
  static int64_t now_us() noexcept;
  bool enabled_ = true;
  std::atomic<uint64_t> started_{0}, done_{0}, wait_us_{0};
  std::atomic<int64_t> op_start_us_{0};  // 0: not in an op
  std::atomic<int64_t> first_op_us_{0};
  // Since init's start; first_done_us_ is the program's first op after init.
  std::atomic<int64_t> init_start_us_{0}, init_connect_us_{0}, init_total_us_{0}, first_done_us_{0};
};

// Replaces frame with one heartbeat request carrying this process's progress.
void heartbeat_frame(std::string& frame);

// The daemon named this rank as hanging: its main thread is stuck outside
// libdp, so only ending the process ends the step (as PyTorch's NCCL watchdog
// does). Says why on stderr, then _exit(124).
[[noreturn]] void end_hanging_rank(int rank, const std::string& message);

// One per process: every communicator of a rank adds to it.
RankProgress& rank_progress() noexcept;

}  // namespace dp::detail
