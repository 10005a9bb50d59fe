#include "plugin_state.hpp"

#include <cstdio>

#include "slurm_headers.hpp"

namespace dp::spank {

PluginState& state() {
  static PluginState s;
  return s;
}

void report_error(const std::string& message) {
  // stderr, not slurm_error(): Slurm would prefix "srun: error: " and the
  // line must start with "slurm-dp:". In slurmstepd stderr is the log.
  std::fprintf(stderr, "slurm-dp: %s\n", message.c_str());
  std::fflush(stderr);
}

void log_info(const std::string& message) { slurm_verbose("slurm-dp: %s", message.c_str()); }

}  // namespace dp::spank
