#include "stepd_facts.hpp"

#include <unistd.h>

#include <cstdlib>

#include "dp/shown_value.hpp"
#include "plugin_state.hpp"
#include "slurm_step.hpp"

namespace dp::spank {

std::optional<std::string> job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME")) return shown_value(n, 128);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return shown_value(host, 128);
}

bool read_job_step(spank_t sp, JobStep& id) {
  if (spank_get_item(sp, S_JOB_ID, &id.job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &id.step) != ESPANK_SUCCESS)
    return false;
  return id.step != SLURM_BATCH_SCRIPT && id.step != SLURM_EXTERN_CONT &&
         id.step != SLURM_INTERACTIVE_STEP && id.step != SLURM_PENDING_STEP;
}

namespace {

Result<std::vector<int32_t>> local_ranks(spank_t sp) {
  uint32_t count = 0;
  if (const spank_err_t rc = spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &count);
      rc != ESPANK_SUCCESS || count == 0)
    return make_error(Errc::internal, "cannot read this node's task count from slurmstepd: " +
                                          (rc != ESPANK_SUCCESS ? spank_text(rc) : "none"));
  std::vector<int32_t> ranks;
  for (uint32_t local = 0; local < count; ++local) {
    uint32_t global = 0;
    if (const spank_err_t rc = spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, local, &global);
        rc != ESPANK_SUCCESS)
      return make_error(Errc::internal, "cannot read the global rank of local task " +
                                            std::to_string(local) +
                                            " from slurmstepd: " + spank_text(rc));
    ranks.push_back(static_cast<int32_t>(global));
  }
  return ranks;
}

}  // namespace

Result<StepdFacts> read_stepd_facts(spank_t sp, const JobStep& id) {
  StepdFacts f;
  f.id = id;
  spank_err_t rc{};  // ESPANK_SUCCESS until a call fails
  if ((rc = spank_get_item(sp, S_JOB_UID, &f.user.uid)) != ESPANK_SUCCESS ||
      (rc = spank_get_item(sp, S_JOB_GID, &f.user.gid)) != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot read the job's uid/gid from slurmstepd: " + spank_text(rc));
  if ((rc = spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &f.tasks)) != ESPANK_SUCCESS)
    return make_error(Errc::internal,
                      "cannot read the step's task count from slurmstepd: " + spank_text(rc));
  auto ranks = local_ranks(sp);
  DP_TRY(ranks);
  f.local_ranks = std::move(*ranks);
  if (spank_get_item(sp, S_JOB_NNODES, &f.nodes) != ESPANK_SUCCESS) f.nodes = 1;
  if (uint32_t node = 0; spank_get_item(sp, S_JOB_NODEID, &node) == ESPANK_SUCCESS)
    f.node_index = static_cast<int>(node);
  uint32_t local_of_rank0 = 0;
  f.master =
      spank_get_item(sp, S_JOB_GLOBAL_TO_LOCAL_ID, uint32_t{0}, &local_of_rank0) == ESPANK_SUCCESS;
  f.node = node_name();
  f.command = task_command(sp);
  f.devices_confined = devices_confined_here();
  f.env = read_job_environment([sp](const char* name) { return job_env(sp, name); });
  return f;
}

}  // namespace dp::spank
