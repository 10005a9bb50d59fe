// What the plugin's Slurm contexts share between Slurm's callbacks, and the
// helpers they all use. Each Slurm process (srun, sbatch, slurmstepd) loads
// its own copy of the plugin.
#pragma once

#include <string>
#include <vector>

#include "dp/options.hpp"
#include "dp/site_config.hpp"
#include "slurm_headers.hpp"

#ifndef DP_DEFAULT_DAEMON_PATH
#error "DP_DEFAULT_DAEMON_PATH must name the installed dp-rendezvousd"
#endif

namespace dp::spank {

// The site's dp-rendezvousd (srun starts it; the node agent is installed beside it).
inline std::string daemon_path(const SiteConfig& site) {
  return site.daemon_path.empty() ? DP_DEFAULT_DAEMON_PATH : site.daemon_path;
}

// What every context shares: the plugin line (slurm_spank_init) and the
// --dp-* values Slurm gave the option callbacks. What srun and slurmstepd
// hold between their own callbacks is private to their files
// (srun_context.cpp, stepd_context.cpp).
struct PluginState {
  SiteConfig site;
  Options cli_options;        // from option callbacks in this process (srun wins)
  bool option_error = false;  // a callback already reported a bad value
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
