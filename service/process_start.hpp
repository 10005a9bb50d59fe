// The start of a per-step service (dp-rendezvousd, dp-nodeagent): both are
// forked by a Slurm process (srun, slurmstepd) and must never outlive it.
#pragma once

namespace dp::service {

// Unblocks every signal (helpers forked by srun/slurmstepd inherit a blocked
// mask), ignores SIGPIPE (a peer's close is an error value, not a death) and
// asks for `death_signal` when the parent dies. False when the parent is
// already gone: there is nothing to serve.
bool tie_to_parent(int death_signal) noexcept;

}  // namespace dp::service
