// State one plugin instance keeps between Slurm's callbacks. Each Slurm
// process (srun, sbatch, slurmstepd) loads its own copy of the plugin.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp::spank {

struct PluginState {
  SiteConfig site;
  Options cli_options;          // from option callbacks in this process (srun wins)
  bool option_error = false;    // a callback already reported a bad value

  // srun side
  pid_t daemon_pid = -1;
  // For the step's end (step_end.cpp): the report, the start-up line, the first failure.
  std::string job_id, step_id;
  bool verbose = false;
  std::string report_file;      // --dp-report or the site's report=, %j/%s expanded
  double srun_check_ms = -1, srun_daemon_ms = -1, srun_layout_ms = -1, srun_ready_ms = -1;

  // slurmstepd side
  bool active = false;          // this step is a slurm-dp step
  std::string lease_path;       // MASTER_PORT lease to release at step end
  // The node's device lists before Slurm narrows them per task; a task
  // whose list differs was bound per task by Slurm.
  std::optional<std::string> node_cuda, node_ze;
};

PluginState& state();

// The one line a user sees for a refused request: "slurm-dp: <message>".
void report_error(const std::string& message);
// Diagnostics that are not the user's fault (slurmstepd log, srun -v).
void log_info(const std::string& message);

}  // namespace dp::spank
