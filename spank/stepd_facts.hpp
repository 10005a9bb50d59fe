// What slurmstepd knows of its step, read once at init_post_opt: Slurm's
// items (the step's ids, the job's user, this node's tasks) and the job's
// environment (job_environment.hpp: the user's word). The callbacks use this
// struct and read nothing again, but for what a task learns in its own
// process (task_init, as the job's user).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/result.hpp"
#include "job_environment.hpp"
#include "slurm_headers.hpp"
#include "user_child.hpp"

namespace dp::spank {

struct JobStep {
  uint32_t job = 0, step = 0;
  std::string text() const { return std::to_string(job) + "." + std::to_string(step); }
};

struct StepdFacts {
  JobStep id;
  UserIds user;                      // the job's uid and gid
  uint32_t nodes = 1;                // the step's nodes
  uint32_t tasks = 0;                // the step's tasks
  int node_index = -1;               // this node's place in the step (S_JOB_NODEID); -1: unknown
  std::vector<int32_t> local_ranks;  // this node's tasks' global ranks, by local id
  bool master = false;               // rank 0 runs here: this node takes the step's ports
  std::string node;                  // SLURMD_NODENAME (slurmd's, not the job's), shown safely
  std::vector<std::string> command;  // the tasks' argv (S_JOB_ARGV): tells a per-node launcher
  bool devices_confined = false;  // Slurm confines each task to its devices (devices_confined_here)
  JobEnvironment env;             // the user's word
};

// The step's ids; false for none (not a step of tasks: the batch script's,
// the extern or interactive step, a pending one), which slurm-dp leaves alone.
bool read_job_step(spank_t sp, JobStep& id);

// Everything else, once the step is a slurm-dp step.
Result<StepdFacts> read_stepd_facts(spank_t sp, const JobStep& id);

// This node's name for messages (SLURMD_NODENAME, or the host name).
std::string node_name();

// One variable of the job's environment, as root reads it (at most 4 KiB).
std::optional<std::string> job_env(spank_t sp, const char* name);

}  // namespace dp::spank
