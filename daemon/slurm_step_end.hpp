// Ending a step through slurmctld, as its user may (what `scancel JOB.STEP`
// does). Used when a node is lost or silent: its tasks are out of every
// agent's reach, its slurmd cannot report their end, and srun would otherwise
// wait for Slurm's node timeout (SlurmdTimeout, 300 s by default). slurmctld
// signals the step's tasks on the nodes it can reach and tells srun the step
// is complete; srun then waits at most KillWait + 2 s and exits.
#pragma once

#include <string>

namespace dp::daemon {

// Asks slurmctld to SIGKILL the step, on a thread of its own (the RPC must not
// stall the event loop). `why` is logged. Returns at once.
void end_step_through_slurmctld(const std::string& job_id, const std::string& step_id,
                                const std::string& why);

}  // namespace dp::daemon
