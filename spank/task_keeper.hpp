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
// (keeper_contract.hpp). It starts nothing before its agent's first word
// (a spare's keeper: until told), and a task whose keeper cannot reach its
// agent within seconds fails, saying so.
//
// A generation ends whole: the keeper is its program's subreaper, so what
// the program starts stays below it (a shell's python, DataLoader workers,
// what double-forks); a stop signals the whole tree, kills what is left of
// it after the grace (each process stopped first, so none forks away), and
// says "stopped" only when none of it is left; the keeper's own end, and the
// loss of its agent, kill the tree first.
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
  std::string socket;  // the node agent's keeper socket ("@name" + kKeeperSuffix)
  int local = 0;       // the task's local index on the node
  // Sets the program's variables in the task's environment for node rank
  // `node_rank`, restart `count` (slurmstepd execs with that environment).
  std::function<Result<void>(int node_rank, int count)> prepare;
};

// Returns 0 only in the program's own process (slurmstepd then execs it);
// the keeper never returns (it ends as its program's last end did). -1: no
// keeper could be set up (its agent out of reach); the task fails.
int keep_task(const KeeperPlan& plan);

}  // namespace dp::spank
