// Per-node launchers: torchrun and its kin (python -m torch.distributed.run,
// python -m torch.distributed.launch --use-env, NVIDIA's ft_launcher) run
// once per node and fork one worker per device. They read every setting
// from a flag or its PET_<FLAG> variable (the flag wins), so a step with one
// task per node gets the PET_* variables and the launcher needs no flags.
// Pure: no Slurm types.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dp/options.hpp"
#include "dp/result.hpp"

namespace dp {

// The torchrun-compatible launcher a task's command starts ("torchrun",
// "torch.distributed.run", "torch.distributed.launch", "ft_launcher"), or ""
// when its words show none. Looks through `env VAR=x ...` and the script of
// `sh|bash -c '...'`.
std::string launcher_in_command(const std::vector<std::string>& argv);

// How a step's tasks relate to per-node launchers.
struct LaunchShape {
  bool per_node = false;  // one task per node: it gets the PET_* variables
  std::string launcher;   // not empty: the tasks are launchers; --dp-tiles counts per worker
  int nodes = 0;
  // --dp-spares in a launcher's step: the launchers meet in torchrun's c10d
  // rendezvous, served by the step's store, and `spares` of them wait on its
  // redundancy list (elastic(); layout.hpp's plan_restarts sets it).
  int spares = 0;
  bool elastic() const noexcept { return spares > 0 && !launcher.empty(); }
};

// The shape of a step of `tasks` tasks on `nodes` nodes whose tasks run
// `command` (empty: not known). A recognised launcher (or
// --dp-launcher=torchrun) with several tasks on a node is refused: each
// would start its own workers on the same devices and port.
Result<LaunchShape> launch_shape(const Options& opts, const std::vector<std::string>& command,
                                 int nodes, int tasks);

// One launcher's workers and their devices.
struct Workers {
  int count = 0;  // 0: not known here (the launcher's --nproc-per-node or default decides)
  // The launcher task's mask: worker w's first device is entry w, so its
  // cuda:LOCAL_RANK (xpu:LOCAL_RANK) is its own; its other devices are
  // entries w + count, w + 2*count, ...
  std::vector<std::string> mask;
  std::vector<int> indices;                       // the mask's node tile indices (DP_TILES)
  std::vector<std::vector<std::string>> devices;  // per worker: its devices, first = its own
};

// The workers of one launcher from the devices it may use (`tiles`: the
// node's or the task's entries) and `tiles_per_worker` (--dp-tiles; 0: one
// device each, Slurm's mask left as it is).
Result<Workers> plan_workers(const std::vector<std::string>& tiles, int tiles_per_worker);

// PET_NNODES, PET_NODE_RANK (the task's rank: with one task per node it is
// the node's place in Slurm's order, and node rank 0 holds MASTER_ADDR),
// PET_RDZV_BACKEND=static and, when known, PET_NPROC_PER_NODE. An elastic
// step's: PET_NNODES=N:N (N: the nodes that are no spares; the rendezvous
// gives each launcher its node rank) and PET_RDZV_BACKEND=c10d.
std::vector<std::pair<std::string, std::string>> launcher_environment(const LaunchShape& shape,
                                                                      int rank,
                                                                      const Workers& workers);
// PET_MASTER_ADDR and PET_MASTER_PORT, for a per-node step. An elastic
// step's instead: PET_RDZV_ENDPOINT (the node agent's store on 127.0.0.1,
// `port`), PET_RDZV_ID and PET_RDZV_CONF (every launcher a client,
// is_host=false; a join timeout of a day, so a spare waits as long as the
// step; torchrun's own keep-alive, as the daemon ages a lost node's
// launchers in the rendezvous at once: daemon/torchrun_launchers.hpp),
// PET_MONITOR_INTERVAL=0.1 (PyTorch 2.x's own; 1.13 looks at its workers
// every 5 s) and TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (env_names.hpp says
// why).
std::vector<std::pair<std::string, std::string>> launcher_master_environment(
    const LaunchShape& shape, const std::string& addr, const std::string& port);

}  // namespace dp
