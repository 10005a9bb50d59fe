#include "startup_log.hpp"

#include <cstdio>

#include "dp/env_names.hpp"
#include "env_parse.hpp"
#include "rank_progress.hpp"

namespace dp::detail {

StartupLog::StartupLog(std::string backend, int rank)
    : backend_(std::move(backend)),
      rank_(rank),
      enabled_(debug_enabled()),
      start_(Clock::now()),
      last_(start_) {
  rank_progress().init_begin();  // the daemon's start-up timings get each rank's phases
}

void StartupLog::phase(const std::string& name) {
  rank_progress().init_connected();  // the first phase reaches the daemon
  if (!enabled_) return;
  auto now = Clock::now();
  std::fprintf(stderr, "slurm-dp: rank %d %s init: %s %.2f ms\n", rank_, backend_.c_str(),
               name.c_str(), std::chrono::duration<double, std::milli>(now - last_).count());
  last_ = now;
}

void StartupLog::done() {
  rank_progress().init_done();
  if (!enabled_) return;
  std::fprintf(stderr, "slurm-dp: rank %d %s init: total %.2f ms\n", rank_, backend_.c_str(),
               std::chrono::duration<double, std::milli>(Clock::now() - start_).count());
}

}  // namespace dp::detail
