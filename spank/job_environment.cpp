#include "job_environment.hpp"

#include <utility>

#include "dp/env_names.hpp"
#include "skipped_step.hpp"

namespace dp::spank {
namespace {

using Field = std::optional<std::string> JobEnvironment::*;

// One row per variable: the inventory and the reading are this one table.
const std::vector<std::pair<const char*, Field>>& rows() {
  static const std::vector<std::pair<const char*, Field>> r = {
      {env::kOptions, &JobEnvironment::options},
      {env::kJobId, &JobEnvironment::job_id},
      {env::kStepId, &JobEnvironment::step_id},
      {env::kRdvAddr, &JobEnvironment::rdv_addr},
      {env::kRdvSecret, &JobEnvironment::rdv_secret},
      {env::kMasterAddr, &JobEnvironment::master_addr},
      {env::kCudaVisibleDevices, &JobEnvironment::cuda_visible},
      {env::kZeAffinityMask, &JobEnvironment::ze_mask},
      {env::kSkipStep, &JobEnvironment::skip_step},
      {"SLURM_HET_SIZE", &JobEnvironment::het_size},
      {"SLURM_EXIT_ERROR", &JobEnvironment::exit_error},
      {"SLURM_STEP_RESV_PORTS", &JobEnvironment::resv_ports},
  };
  return r;
}

}  // namespace

JobEnvironment read_job_environment(const EnvLookup& get) {
  JobEnvironment e;
  for (const auto& [name, field] : rows()) e.*field = get(name);
  return e;
}

const std::vector<const char*>& root_read_variables() {
  static const std::vector<const char*> names = [] {
    std::vector<const char*> n;
    for (const auto& row : rows()) n.push_back(row.first);
    return n;
  }();
  return names;
}

Result<void> check_srun_prepared(const JobEnvironment& env, uint32_t job, uint32_t step) {
  if (env.job_id != std::to_string(job) || env.step_id != std::to_string(step) || !env.options)
    return make_error(Errc::internal,
                      "srun did not prepare this step for slurm-dp (DP_JOB_ID/DP_STEP_ID "
                      "name another step, or no DP_OPTIONS): is spank_dp.so in srun's "
                      "plugstack.conf too?");
  return {};
}

std::optional<int> skipped_status(const JobEnvironment& env, uint32_t job, uint32_t step) {
  if (env.skip_step)
    if (auto status = skipped_step_status(*env.skip_step, job, step)) return status;
  if (env.het_size) return srun_error_status(env.exit_error ? env.exit_error->c_str() : "");
  return std::nullopt;
}

}  // namespace dp::spank
