// libslurm's C API for every part that calls it (the SPANK plugin, the
// daemon, dp-top): Slurm's headers with C linkage, and below them what
// changed between the releases slurm-dp builds against (22.05 to 26.05), one
// named check each, so a caller says what it wants rather than which release
// it is on. scripts/compile-slurm-versions compiles every caller against each
// series' headers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>

extern "C" {
#include <slurm/slurm.h>
// The configuration this process read (srun: its slurm.conf, or the copy a
// configless cluster sent). Slurm's headers do not declare it, but libslurm
// and libslurmfull export it under this name in every release from 22.05 to
// 26.05, and its type is public.
extern slurm_conf_t slurm_conf;
}

// 23.11 made hostlist_t the struct itself; the slurm_hostlist_* calls take and
// return a pointer to it (before, hostlist_t was that pointer).
#define DP_SLURM_HOSTLIST_IS_STRUCT (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))
// 23.11: slurm_kill_job_step gained a flags argument.
#define DP_SLURM_KILL_STEP_FLAGS (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0))
// 25.11: slurm_get_job_steps and slurm_kill_job_step take the step's
// slurm_step_id_t instead of (job id, step id).
#define DP_SLURM_STEP_QUERY_BY_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0))
// 26.05: slurm_load_job takes a slurm_step_id_t by value instead of a job id
// (the job-id form is a C11 _Generic macro, which C++ cannot use).
#define DP_SLURM_JOB_QUERY_BY_ID (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0))
// 25.05: a plugin may name what its slurm_spank_init failure means
// (slurm_spank_init_failure_mode, ESPANK_JOB_FAILURE); without it the failure
// in a node context drains the node.
#define DP_SLURM_SPANK_FAILURE_MODE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0))
// (24.11 removed slurm_get_errno(), which only ever returned errno: callers
// read errno on every release.)

namespace dp::slurm {

#if DP_SLURM_HOSTLIST_IS_STRUCT
using HostList = hostlist_t*;
#else
using HostList = hostlist_t;
#endif

#if DP_SLURM_STEP_QUERY_BY_ID
// A whole job's or one step's id as 25.11+ calls take it (no SLUID: the
// numeric ids name it).
inline slurm_step_id_t step_id(uint32_t job_id, uint32_t step) {
  slurm_step_id_t id{};
  id.job_id = job_id;
  id.step_id = step;
  id.step_het_comp = NO_VAL;
  return id;
}
#endif

// slurmctld's records of one step (SLURM_SUCCESS or SLURM_ERROR with errno).
inline int get_step_info(uint32_t job_id, uint32_t step, job_step_info_response_msg_t** resp) {
#if DP_SLURM_STEP_QUERY_BY_ID
  slurm_step_id_t id = step_id(job_id, step);
  return slurm_get_job_steps(&id, resp, SHOW_ALL);
#else
  return slurm_get_job_steps(0, job_id, step, resp, SHOW_ALL);
#endif
}

// slurmctld's records of one job (SLURM_SUCCESS or SLURM_ERROR with errno).
inline int load_job(uint32_t job_id, job_info_msg_t** resp) {
#if DP_SLURM_JOB_QUERY_BY_ID
  return slurm_load_job(resp, step_id(job_id, NO_VAL), SHOW_ALL);
#else
  return slurm_load_job(resp, job_id, SHOW_ALL);
#endif
}

// Asks slurmctld to signal every task of one step, as `scancel -s SIG
// JOB.STEP` does (SLURM_SUCCESS or SLURM_ERROR with errno).
inline int signal_step(uint32_t job_id, uint32_t step, uint16_t signal) {
#if DP_SLURM_STEP_QUERY_BY_ID
  slurm_step_id_t id = step_id(job_id, step);
  return slurm_kill_job_step(&id, signal, 0);
#elif DP_SLURM_KILL_STEP_FLAGS
  return slurm_kill_job_step(job_id, step, signal, 0);
#else
  return slurm_kill_job_step(job_id, step, signal);
#endif
}

// SrunPortRange as this process read it: where srun's own listeners take
// their ports, so the range a firewalled login host opens to the nodes.
// {0, 0}: unset (any port).
struct PortRange {
  int low = 0, high = 0;
};
inline PortRange srun_port_range() {
  const uint16_t* r = slurm_conf.srun_port_range;
  if (r == nullptr || r[0] == 0 || r[1] < r[0]) return {};
  return {r[0], r[1]};
}
// slurm.conf's path (cgroup.conf lies beside it) and its TaskPlugin, as this
// process read them; empty: unknown.
inline const char* config_file() { return slurm_conf.slurm_conf ? slurm_conf.slurm_conf : ""; }
inline const char* task_plugin() { return slurm_conf.task_plugin ? slurm_conf.task_plugin : ""; }
// MpiParams (its ports= bound what Slurm can reserve for a step), as this
// process read slurm.conf (slurmd hands it to slurmstepd); empty: unset.
inline const char* mpi_params() { return slurm_conf.mpi_params ? slurm_conf.mpi_params : ""; }

}  // namespace dp::slurm
