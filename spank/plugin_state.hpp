// State one plugin instance keeps between Slurm's callbacks. Each Slurm
// process (srun, sbatch, slurmstepd) loads its own copy of the plugin.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent_launcher.hpp"
#include "dp/layout.hpp"
#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"
#include "port_lease.hpp"
#include "slurm_headers.hpp"

#ifndef DP_DEFAULT_DAEMON_PATH
#error "DP_DEFAULT_DAEMON_PATH must name the installed dp-rendezvousd"
#endif

namespace dp::spank {

// The site's dp-rendezvousd (srun starts it; the node agent is installed beside it).
inline std::string daemon_path(const SiteConfig& site) {
  return site.daemon_path.empty() ? DP_DEFAULT_DAEMON_PATH : site.daemon_path;
}

struct PluginState {
  SiteConfig site;
  Options cli_options;        // from option callbacks in this process (srun wins)
  bool option_error = false;  // a callback already reported a bad value

  // srun side
  pid_t daemon_pid = -1;
  // (job, step) srun explained or refused; in an allocation it already had,
  // where the job's next step needs the CPUs, srun waits for the step's end.
  std::optional<std::pair<uint32_t, uint32_t>> skipped;
  bool srun_in_allocation = false;
  // For the step's end (step_end.cpp): the report, the start-up line, the first failure.
  std::string job_id, step_id;
  bool verbose = false;
  std::string report_file;  // --dp-report or the site's report=, %j/%s expanded
  double srun_check_ms = -1, srun_daemon_ms = -1, srun_layout_ms = -1, srun_ready_ms = -1;

  // slurmstepd side. Whether a step is a slurm-dp step is decided from the
  // options Slurm carries to slurmstepd (cli_options, filled by the remote
  // option callbacks) or the site's default=on, never from DP_* variables,
  // which the user may set to anything. Their values come from the one
  // value srun resolved (DP_OPTIONS), in facts.options.
  bool active = false;                   // this step is a slurm-dp step
  StepFacts facts;                       // this node's part of the step, for the layout core
  std::string setup_error;               // set-up failed: every task fails with it
  std::string master_addr, master_port;  // set again in each task, after earlier plugins
  std::optional<int> skip_status;        // srun explained or refused the step: each task exits so
  PortLease lease;                       // MASTER_PORT lease to release at step end
  int leased_port = 0;                   // on the master node: re-checked free in rank 0
  NodeAgent agent;                       // this node's dp-nodeagent; stopped at step end
  uint32_t tasks_ended = 0;              // task exits told to the agent
};

PluginState& state();

// The step's command (S_JOB_ARGV, srun and slurmstepd alike): it tells a
// per-node launcher (torchrun) from a rank.
std::vector<std::string> task_command(spank_t sp);

// The one line a user sees for a refused request: "slurm-dp: <message>".
void report_error(const std::string& message);
// The site's plugin line needs a change that stops nothing (a removed key):
// "slurm-dp: warning: ..." lines, on srun's stderr or in slurmstepd's log.
void report_site_warnings(const SiteConfig& site);

}  // namespace dp::spank
