// Slurm's C headers for the plugin's C++ files: spank.h needs <stdint.h>
// first and both need C linkage. Below them, what changed in Slurm's API
// between the releases slurm-dp builds against (22.05 on), one named check
// each, so the code says what differs rather than which release it is.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

// 23.11 made hostlist_t the struct itself; the slurm_hostlist_* calls take and
// return a pointer to it (before, hostlist_t was that pointer).
#define DP_SLURM_HOSTLIST_IS_STRUCT (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))
// 25.11: slurm_get_job_steps takes the step's slurm_step_id_t instead of
// (update time, job id, step id).
#define DP_SLURM_STEP_QUERY_BY_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0))
// 25.05: a plugin may name what its slurm_spank_init failure means
// (slurm_spank_init_failure_mode, ESPANK_JOB_FAILURE); without it the failure
// in a node context drains the node.
#define DP_SLURM_SPANK_FAILURE_MODE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0))
// (24.11 removed slurm_get_errno(), which only ever returned errno: the
// plugin reads errno on every release.)

namespace dp::spank {

#if DP_SLURM_HOSTLIST_IS_STRUCT
using SlurmHostList = hostlist_t*;
#else
using SlurmHostList = hostlist_t;
#endif

// slurmctld's records of one step (SLURM_SUCCESS or SLURM_ERROR with errno).
inline int get_step_info(uint32_t job_id, uint32_t step_id, job_step_info_response_msg_t** resp) {
#if DP_SLURM_STEP_QUERY_BY_ID
  slurm_step_id_t id{};
  id.job_id = job_id;
  id.step_id = step_id;
  id.step_het_comp = NO_VAL;
  return slurm_get_job_steps(&id, resp, SHOW_ALL);
#else
  return slurm_get_job_steps(0, job_id, step_id, resp, SHOW_ALL);
#endif
}

}  // namespace dp::spank
