// srun's side of the step report: its own start-up phases, and at
// the step's end the daemon's report over the user's report socket: the
// first failure as srun's last line, the start-up line on --dp-verbose, and
// the JSON file of --dp-report (or the site's report=).
#pragma once

#include <chrono>
#include <string>

#include "dp/options.hpp"
#include "plugin_state.hpp"

namespace dp::spank {

class StepClock {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

void remember_step(PluginState& st, uint32_t job_id, uint32_t step_id, const Options& opts,
                   double ready_ms);
// Never fails the step: a missing report is said on stderr.
void report_step_end(const PluginState& st);

}  // namespace dp::spank
