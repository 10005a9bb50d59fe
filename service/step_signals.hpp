// The signals Slurm sends every process of a step (dp/step_signals.hpp says
// which) in the two per-step services: dp-rendezvousd ignores them all but
// srun's SIGTERM; dp-nodeagent records each one, so it can tell the daemon
// that the user signalled the step, and knows it before it reads the task
// exits that follow (the handler runs before the loop reads anything else).
#pragma once

#include <vector>

#include "dp/result.hpp"
#include "handles.hpp"

namespace dp::service {

// SIG_IGN for every step signal but `keep` (0: none).
void ignore_step_signals(int keep) noexcept;

// A handler for every step signal writes its number to a pipe that the
// event loop watches. One per process (the handler's pipe is global).
class StepSignalPipe {
 public:
  static Result<StepSignalPipe> install();
  int fd() const noexcept { return read_.get(); }
  // The signals received since the last call, oldest first (repeats of one
  // signal may coalesce, as the kernel coalesces them).
  std::vector<int> drain();

 private:
  UniqueFd read_, write_;
};

}  // namespace dp::service
