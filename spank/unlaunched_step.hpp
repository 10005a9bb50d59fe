// Ending a step that srun created but will not launch (--dp-explain, a
// refusal). Slurm 22.05 keeps such a step, and the CPUs it holds, until its
// job ends: neither srun's own exit path nor the kill its shepherd sends
// completes a step whose tasks never reached a node, so the next srun of a
// batch job would wait for resources that never come back.
#pragma once

#include <cstdint>

#include "dp/result.hpp"

namespace dp::spank {

// Tells slurmctld that every node of the step is done (REQUEST_STEP_COMPLETE
// for node ranks 0..nodes-1, as srun itself does for steps it abandons) with
// `exit_code` as the step's code.
Result<void> complete_unlaunched_step(uint32_t job_id, uint32_t step_id, uint32_t nodes,
                                      uint32_t exit_code);

}  // namespace dp::spank
