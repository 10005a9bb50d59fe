// A task that keeps its program, in a step that restarts in place
// (--dp-spares, --dp-max-restarts). Slurm ends a node's part of a step once
// all its tasks have exited and cannot start a task again, so the task
// itself stays: in slurm_spank_task_init (the task's own process, as the
// user, just before slurmstepd execs the program) it forks, and the child
// returns to slurmstepd, which goes on exactly as it would have (task
// prologs, TMPDIR, PATH, limits, exec). The parent keeps the task alive as
// the program's keeper: it tells its node agent when the program starts and
// ends, and on the agent's word forks again from the same point (the same
// argv, environment and working directory, with the variables of the node
// rank the node holds now), stops it, or ends as the program's last end did
// (keeper_contract.hpp). A spare's keeper starts nothing until told.
//
// Slurm's signals reach every process of the step, the program too: the
// keeper passes on none of them, ends by a step-ending one only while no
// program runs, and forwards what anyone else sends the task's pid. A
// program never outlives its keeper (PR_SET_PDEATHSIG).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "dp/result.hpp"

namespace dp::spank {

struct KeeperPlan {
  std::string socket;            // the node agent's keeper socket ("@name" + kKeeperSuffix)
  int local = 0;                 // the task's local index on the node
  std::optional<int> node_rank;  // the node's node rank at the step's start; nullopt: a spare
  // Sets the program's variables in the task's environment for node rank
  // `node_rank`, restart `count` (slurmstepd execs with that environment).
  std::function<Result<void>(int node_rank, int count)> prepare;
};

// Returns 0 only in the program's own process (slurmstepd then execs it);
// the keeper never returns (it ends as its program's last end did). -1: no
// program could be prepared; the task fails.
int keep_task(const KeeperPlan& plan);

}  // namespace dp::spank
