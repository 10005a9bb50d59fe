// Every value slurmstepd's root context reads from the job's environment.
// Each is the user's word, never Slurm's: srun copies the user's shell into
// it, and a user's own srun (another slurm.conf, no plugin) writes what it
// likes. Root does with each only what the user could do without slurm-dp:
// packaging/admin/security.md ("What root reads from the job's environment") says what
// and why, entry by entry, and tests/unit/spank/root_reads_test.cpp holds each
// entry to it with a hostile value. Read once, into this struct, at
// init_post_opt (stepd_facts.hpp); nothing else in root reads the job's
// environment.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp::spank {

struct JobEnvironment {
  std::optional<std::string> options;  // DP_OPTIONS: the step's --dp-* values as srun resolved them
  std::optional<std::string> job_id;   // DP_JOB_ID  } srun's ids of the step it prepared:
  std::optional<std::string> step_id;  // DP_STEP_ID } compared with Slurm's, never acted on
  std::optional<std::string> rdv_addr;     // DP_RDV_ADDR: the daemon, for the node agent (the user)
  std::optional<std::string> rdv_secret;   // DP_RDV_SECRET: likewise
  std::optional<std::string> master_addr;  // MASTER_ADDR: set again in the user's tasks
  std::optional<std::string> cuda_visible;  // CUDA_VISIBLE_DEVICES } the node's devices, for
  std::optional<std::string> ze_mask;       // ZE_AFFINITY_MASK     } the tasks' masks
  std::optional<std::string> skip_step;     // DP_SKIP_STEP: the tasks end before the program
  std::optional<std::string> het_size;      // SLURM_HET_SIZE: a heterogeneous step, skipped
  std::optional<std::string> exit_error;    // SLURM_EXIT_ERROR: the skipped tasks' status
  std::optional<std::string> resv_ports;    // SLURM_STEP_RESV_PORTS: only compared with Slurm's
};

// One variable of the job's environment; nullopt: unset (or longer than root reads).
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// The job's environment as root reads it, through `get` (spank_getenv in
// slurmstepd, a table in the tests).
JobEnvironment read_job_environment(const EnvLookup& get);

// The inventory: every name read_job_environment asks for, in its order.
const std::vector<const char*>& root_read_variables();

// srun prepared this step (its DP_JOB_ID, DP_STEP_ID and DP_OPTIONS): a step
// whose variables name another (an enclosing step's, the user's own) or lack
// DP_OPTIONS fails its tasks naming the plugin line, and nothing is set up.
Result<void> check_srun_prepared(const JobEnvironment& env, uint32_t job, uint32_t step);

// The exit status of every task of a step srun explained or refused
// (DP_SKIP_STEP naming this step, or a heterogeneous step's later component,
// with srun's error status); nullopt: the step runs. It only ever makes root
// do less: the user's own tasks end before their program.
std::optional<int> skipped_status(const JobEnvironment& env, uint32_t job, uint32_t step);

}  // namespace dp::spank
