// The layout core: from a step's shape, the options and the site settings,
// every task's rank, counts and accelerator mask. Pure: no Slurm, socket or
// CUDA types, so recorded step environments can be replayed in unit tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp {

// A step as Slurm laid it out. hosts[i] holds the global task ids
// task_ids[i], in local-id order (SLURM_LOCALID is the index).
struct StepShape {
  std::vector<std::string> hosts;          // already expanded (slurm_hostlist_*)
  std::vector<std::vector<int>> task_ids;  // one list per host
  int task_count() const noexcept;
  // Index of the host holding task `rank`, or -1.
  int host_of(int rank) const noexcept;
};

enum class Distribution { block, cyclic };

// SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE syntax: "2(x3),1".
Result<std::vector<int>> parse_tasks_per_node(std::string_view text);
// Task ids per node for a distribution (what Slurm does for block/cyclic).
std::vector<std::vector<int>> assign_task_ids(const std::vector<int>& tasks_per_node,
                                              Distribution dist);

// What the checks before launch decided for the whole step.
struct StepPlan {
  int world_size = 0;
  int tiles_per_task = 0;  // 0: no mask
};

// Checks the options against the step before any task starts.
// node_tiles[i]: tiles host i has, or -1 when unknown (checked again on the node).
Result<StepPlan> plan_step(const Options& opts, const SiteConfig& site, const StepShape& shape,
                           const std::vector<int>& node_tiles);

// Where one task sits.
struct TaskPlace {
  int rank = 0;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
};

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The variables Slurm's gres plugin already put in the task's environment,
// which narrow what the task may see.
struct VisibleDevices {
  std::optional<std::string> cuda;  // CUDA_VISIBLE_DEVICES
  std::optional<std::string> ze;    // ZE_AFFINITY_MASK
};

// Tiles of one node, as the entries the mask variable takes.
struct NodeTiles {
  std::vector<std::string> entries;  // cuda: device ids; ze: "dev.stack"; rdu/none: tile numbers
  // Slurm narrowed this task's view to its own share (--gpus-per-task,
  // --gpu-bind): entries are the task's, not the node's.
  bool per_task = false;
};
// Devices of gres `name` in a node's Gres string ("gpu:tesla:4(S:0-1),mps:100"
// -> 4 for "gpu"); 0 when absent or unreadable.
int gres_count(std::string_view gres, std::string_view name);

// The node's tiles for the site kind: from Slurm's variables when set, else
// from the site's declared counts.
Result<NodeTiles> node_tiles(const SiteConfig& site, const VisibleDevices& visible);

// Per-task variables: torchrun's names (except MASTER_*), the mask variable
// of the site's kind and DP_TILES. `tiles`: the node's tiles (node_tiles()).
Result<EnvList> task_environment(const StepPlan& plan, const SiteConfig& site,
                                 const TaskPlace& place, const NodeTiles& tiles);

// "0x" hex bit mask, one bit per tile index (SF_RNT_TILE_AFFINITY).
std::string tile_bitmask(const std::vector<int>& tiles);

// Every task of a step, in rank order, with MASTER_ADDR/MASTER_PORT: what
// --dp-explain prints and what the unit tests replay. tiles_per_host[i]
// describes host i.
struct TaskEnvironment {
  int rank = 0;
  std::string host;
  EnvList env;
};
Result<std::vector<TaskEnvironment>> step_environment(const StepPlan& plan, const SiteConfig& site,
                                                      const StepShape& shape,
                                                      const std::vector<NodeTiles>& tiles_per_host,
                                                      const std::string& master_addr,
                                                      const std::string& master_port);

// One readable line per task for --dp-explain.
std::vector<std::string> explain_lines(const std::vector<TaskEnvironment>& tasks);

}  // namespace dp
