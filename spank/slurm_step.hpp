// What srun, and slurmstepd on rank 0's node, learn from slurmctld about the
// step it just created; and what slurmstepd's own slurm.conf says.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dp/layout.hpp"
#include "dp/result.hpp"

namespace dp::spank {

// Nodes (expanded with slurm_hostlist_*) and task ids per node.
Result<StepShape> load_step_shape(uint32_t job_id, uint32_t step_id);

// The step's GPU request as slurmctld recorded it (its TRES per node, task
// and step, and its TRES binding).
Result<DeviceRequest> load_step_request(uint32_t job_id, uint32_t step_id);

// Whether slurmctld still holds the step (its CPUs are not yet the job's
// again).
Result<bool> step_listed(uint32_t job_id, uint32_t step_id);

// Whether Slurm on this host confines each task to the devices it binds to
// it: TaskPlugin and cgroup.conf (beside slurm.conf) as this process read
// them, srun's or slurmstepd's (StepFacts::devices_confined).
bool devices_confined_here();

// The ports Slurm reserved for the step, as slurmctld's step record holds
// them ("12000-12003"; "" where it reserved none): Slurm's word, unlike the
// job's SLURM_STEP_RESV_PORTS (dp/slurm_reservation.hpp).
Result<std::string> load_step_resv_ports(uint32_t job_id, uint32_t step_id);

struct NodeFacts {
  std::string address;  // NodeAddr
  std::string gres;     // configured Gres, e.g. "gpu:4"
};
// NodeAddr and Gres of the given nodes, one RPC.
Result<std::map<std::string, NodeFacts>> load_nodes(const std::vector<std::string>& names);

}  // namespace dp::spank
