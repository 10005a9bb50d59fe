// A step srun explained or refused still launches, so that it ends on its
// nodes as Slurm's own steps do: Slurm created it before srun asked the
// plugin, and a created step that is never launched holds its CPUs until
// the job ends (no public call completes it). srun names the step and its
// exit status in DP_SKIP_STEP; each node then ends every task before the
// program runs, with that status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dp::spank {

// "<job>.<step>:<status>", the value of DP_SKIP_STEP.
std::string format_skipped_step(uint32_t job, uint32_t step, int status);

// The exit status for every task of step job.step, or nullopt when `value`
// names another step (an enclosing step's, inherited) or is malformed: the
// step then runs as any other.
std::optional<int> skipped_step_status(std::string_view value, uint32_t job, uint32_t step);

// srun's own exit status when it cannot launch a step: SLURM_EXIT_ERROR
// (1 to 255) or 1.
int srun_error_status(const char* slurm_exit_error);

}  // namespace dp::spank
