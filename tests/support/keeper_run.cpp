// A task keeper without Slurm (spank/task_keeper.hpp), for scripts/gpu-check,
// whose machine has no Slurm: this process is the "task", keeps its program
// as the plugin's task_init does, and execs it in each child with the
// variables of the node rank the agent tells it (the core's acting_place:
// the agent's first rank over TASKS_PER_NODE; none for a spare) and the
// restart count, as slurmstepd would have.
//
//   dp_keeper_run SOCKET LOCAL TASKS_PER_NODE WORLD -- PROGRAM ARGS...
//
// SOCKET: the node agent's keeper socket ("@name.keepers"). It waits for one
// line on stdin first: the caller, playing root, has told the agent this pid
// by then.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dp/env_names.hpp"
#include "dp/params.hpp"
#include "dp/spares.hpp"
#include "task_keeper.hpp"

int main(int argc, char** argv) {
  int sep = 1;
  while (sep < argc && std::string(argv[sep]) != "--") ++sep;
  if (sep != 5 || sep + 1 >= argc) {
    std::fprintf(stderr,
                 "usage: dp_keeper_run SOCKET LOCAL TASKS_PER_NODE WORLD -- PROGRAM "
                 "ARGS...\n");
    return 2;
  }
  auto local = dp::parse_whole_number(argv[2], 0, 4096);
  auto per_node = dp::parse_whole_number(argv[3], 1, 4096);
  auto world = dp::parse_whole_number(argv[4], 1, 1 << 24);
  if (!local || !per_node || !world) {
    std::fprintf(stderr, "dp_keeper_run: LOCAL, TASKS_PER_NODE, WORLD are numbers\n");
    return 2;
  }
  char go[16];
  if (!std::fgets(go, sizeof go, stdin)) return 2;
  dp::spank::KeeperPlan plan;
  plan.socket = argv[1];
  plan.local = static_cast<int>(*local);
  const int l = plan.local, t = static_cast<int>(*per_node), w = static_cast<int>(*world);
  plan.prepare = [l, t, w](int nr, int count) -> dp::Result<void> {
    const dp::TaskPlace p = dp::acting_place(nr, l, t);
    dp::EnvList env = {{dp::env::kRank, std::to_string(p.rank)},
                       {dp::env::kLocalRank, std::to_string(p.local_rank)},
                       {dp::env::kLocalWorldSize, std::to_string(p.local_world_size)},
                       {dp::env::kNodeRank, std::to_string(p.node_rank)},
                       {dp::env::kWorldSize, std::to_string(w)}};
    for (auto& v : dp::restart_environment(count)) env.push_back(v);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    return {};
  };
  if (dp::spank::keep_task(plan) != 0) return 1;
  execvp(argv[sep + 1], argv + sep + 1);  // the program's process
  std::perror(argv[sep + 1]);
  return 127;
}
