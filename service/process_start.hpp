// The start of a per-step service (dp-rendezvousd, dp-nodeagent): both are
// forked by a Slurm process (srun, slurmstepd) and must never outlive it.
#pragma once

namespace dp::service {

// Unblocks every signal (helpers forked by srun/slurmstepd inherit a blocked
// mask), ignores SIGPIPE (a peer's close is an error value, not a death) and
// asks for `death_signal` when the parent dies. False when the parent is
// already gone: there is nothing to serve.
bool tie_to_parent(int death_signal) noexcept;

// Raises the soft RLIMIT_NOFILE to the hard limit (no privilege needed): a
// login shell's or a service's soft 1 024 is no limit for a step's peers.
// Returns the soft limit now in force (1 024 when it cannot be read).
unsigned long long raise_fd_limit() noexcept;

}  // namespace dp::service
