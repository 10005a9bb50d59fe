#include "plugin_state.hpp"

#include <algorithm>
#include <cstdio>

#include "slurm_headers.hpp"

namespace dp::spank {

PluginState& state() {
  static PluginState s;
  return s;
}

std::vector<std::string> task_command(spank_t sp) {
  int argc = 0;
  char** argv = nullptr;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argv == nullptr) return {};
  return std::vector<std::string>(argv, argv + std::max(argc, 0));
}

void report_error(const std::string& message) {
  // stderr, not slurm_error(): Slurm would prefix "srun: error: " and the
  // line must start with "slurm-dp:". In slurmstepd stderr is the log.
  std::fprintf(stderr, "slurm-dp: %s\n", message.c_str());
  std::fflush(stderr);
}

void report_site_warnings(const SiteConfig& site) {
  for (const auto& w : site.warnings) {
    // In slurmstepd, Slurm's log is the node's log; srun's stderr is the user's terminal.
    if (spank_context() == S_CTX_REMOTE) slurm_info("slurm-dp: warning: %s", w.c_str());
    else std::fprintf(stderr, "slurm-dp: warning: %s\n", w.c_str());
  }
  std::fflush(stderr);
}

}  // namespace dp::spank
