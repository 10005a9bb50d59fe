// srun's side of the step report: its own start-up phases, and at
// the step's end the daemon's report over the user's report socket: the
// first failure as srun's last line, the start-up line on --dp-verbose, and
// the JSON file of --dp-report (or the site's report=).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "dp/options.hpp"

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

// What srun keeps for the step's end (srun_context.cpp holds it): the report,
// the start-up line, the first failure.
struct StepEndFacts {
  std::string job_id, step_id;
  bool verbose = false;
  std::string report_file;  // --dp-report or the site's report=, %j/%s expanded
  // The daemon's abstract report socket, from its READY line: asked by name,
  // so no other user's socket is ever tried. Empty: found as dp-top finds it.
  std::string report_socket;
  double srun_check_ms = -1, srun_daemon_ms = -1, srun_layout_ms = -1, srun_ready_ms = -1;
  std::string store;  // where PyTorch's ranks meet (store_kind_name): said with the start-up
};

// site_report: the site's report= pattern, which --dp-report overrides.
void remember_step(StepEndFacts& st, uint32_t job_id, uint32_t step_id, const Options& opts,
                   const std::string& site_report, double ready_ms);
// Never fails the step: a missing report is said on stderr.
void report_step_end(const StepEndFacts& st);

}  // namespace dp::spank
