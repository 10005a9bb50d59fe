#include "slurm_step_end.hpp"

#include <signal.h>
#include <stdint.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>

extern "C" {
#include <slurm/slurm_errno.h>
}

#include "dp/slurm_api.hpp"

namespace dp::daemon {

void end_step_through_slurmctld(const std::string& job_id, const std::string& step_id,
                                const std::string& why) {
  char* end = nullptr;
  const unsigned long job = std::strtoul(job_id.c_str(), &end, 10);
  const bool job_ok = end && *end == '\0' && !job_id.empty();
  const unsigned long step = std::strtoul(step_id.c_str(), &end, 10);
  if (!job_ok || !end || *end != '\0' || step_id.empty()) return;
  std::fprintf(stderr,
               "dp-rendezvousd: job %s step %s: %s; asking slurmctld to end the step (its tasks "
               "there cannot be reached, and srun would wait for Slurm's node timeout)\n",
               job_id.c_str(), step_id.c_str(), why.c_str());
  std::thread([job, step, job_id, step_id] {
    slurm_init(nullptr);
    if (slurm::signal_step(static_cast<uint32_t>(job), static_cast<uint32_t>(step), SIGKILL) != 0)
      std::fprintf(stderr, "dp-rendezvousd: job %s step %s: slurmctld did not end the step: %s\n",
                   job_id.c_str(), step_id.c_str(), slurm_strerror(errno));
  }).detach();
}

}  // namespace dp::daemon
