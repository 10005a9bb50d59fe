// Per-phase start-up timings on stderr when DP_DEBUG=1 (as NCCL's "Init
// timings"): the first thing to read when a job starts slowly.
#pragma once

#include <chrono>
#include <string>

namespace dp::detail {

class StartupLog {
 public:
  StartupLog(std::string backend, int rank);
  void phase(const std::string& name);  // time since the previous phase
  void done();                          // total

 private:
  using Clock = std::chrono::steady_clock;
  std::string backend_;
  int rank_;
  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_;
};

}  // namespace dp::detail
