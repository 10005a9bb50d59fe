// Which of Slurm's reserved ports a step may take: only those Slurm reserved
// for this step, never one below the kernel's unprivileged start.
//
// The job's SLURM_STEP_RESV_PORTS is the user's word: srun copies it from the
// user's shell and overwrites it only when Slurm reserved ports itself (never
// on a site without MpiParams=ports=, never with srun --resv-ports=0, and a
// user's own srun sends whatever it likes). Root binds and holds the ports it
// takes, and with --dp-master-socket=pass or share hands them to the user, so
// a port taken from that word would let a user serve on, or connect out from,
// a privileged port (NFS sec=sys trusts source ports below 1024), or make root
// hold another step's port. So the master node asks slurmctld for the step's
// record (its resv_ports: what Slurm itself reserved) and takes only that;
// where slurmctld cannot answer it takes none of the job's list (even inside
// MpiParams=ports= it may name another step's reserved ports) and the step
// leases instead. Pure: the plugin reads the sources, this decides.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace dp {

// The kernel's default net.ipv4.ip_unprivileged_port_start.
inline constexpr int kUnprivilegedPortStart = 1024;

// A port only root may bind: root never binds, holds, passes or shares one
// for a user's step.
inline bool privileged_port(int port, int unprivileged_start) { return port < unprivileged_start; }

// What the master node knows of the step's reservation.
struct ReservationSources {
  std::optional<std::string> job_env;  // SLURM_STEP_RESV_PORTS in the job's environment
  // The step record's resv_ports ("" where Slurm reserved none); nullopt:
  // slurmctld could not be asked (slurmctld_error says why).
  std::optional<std::string> slurmctld;
  std::string slurmctld_error;
  int unprivileged_start = kUnprivilegedPortStart;
};

struct Reservation {
  std::string ports;  // what the step takes (SLURM_STEP_RESV_PORTS' form); "": none
  // Why a list was not taken (or taken from slurmctld instead of the job's
  // variable): the variable, the port and why, for srun's stderr. "": nothing refused.
  std::string refusal;
};

// The step's reservation from its sources. A list refused leaves none: the
// step then leases its ports as where Slurm reserved nothing.
Reservation slurm_reservation(const ReservationSources& sources);

}  // namespace dp
