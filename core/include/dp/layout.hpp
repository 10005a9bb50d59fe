// The layout core: from a step's shape, the options and the site settings,
// every task's rank, counts and accelerator mask. Pure: no Slurm, socket or
// CUDA types, so recorded step environments can be replayed in unit tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/launcher.hpp"
#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"
#include "dp/step_store.hpp"

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
  // The node's entries, of which Slurm bound `bound` to each task in
  // local-rank order (--gpus-per-task); 0: none bound, or `per_task`.
  int bound = 0;
};
// Devices of gres `name` in a node's Gres string ("gpu:tesla:4(S:0-1),mps:100"
// -> 4 for "gpu"); 0 when absent or unreadable; at most 2^20.
int gres_count(std::string_view gres, std::string_view name);

// The node's tiles for the site kind: from Slurm's variables when set, else
// from the site's declared counts.
Result<NodeTiles> node_tiles(const SiteConfig& site, const VisibleDevices& visible);

// Whether Slurm's device list for the site's kind names each device by its
// position (0,1,2...), as srun's --dp-explain counts them before launch; not
// so with gres.conf Flags=env_uuid (GPU UUIDs) or global indexes on a node
// whose step has devices 2,3. An unset or empty list counts as positions.
bool devices_named_by_position(const SiteConfig& site, const VisibleDevices& visible);

// "0x" hex bit mask, one bit per tile index (SF_RNT_TILE_AFFINITY).
std::string tile_bitmask(const std::vector<int>& tiles);

// ---- The one entry: a step's layout from plain facts ----
// srun (its checks and --dp-explain), slurmstepd (each task) and the
// recorded-layout tests call plan_layout() with what they know; the plugin
// only gathers the facts and applies the plan.

// What is known of one node's devices.
struct NodeDevices {
  // srun: the node's configured Gres= ("gpu:h100:8(S:0-1)"); nullopt: not read.
  std::optional<std::string> gres;
  // slurmstepd: the devices Slurm's gres plugin gave the step on this node,
  // before it narrows them per task; nullopt: not known here.
  std::optional<VisibleDevices> given;
};

// The GPUs the step asked Slurm for, as numbers.
struct DeviceRequest {
  int per_node = 0;  // --gres=gpu:N, --gpus-per-node (or inherited from the job)
  int per_task = 0;  // --gpus-per-task
  int per_step = 0;  // --gpus
  // Slurm narrows each task's devices to its own share (--gpu-bind=per_task,
  // which --gpus-per-task implies).
  bool bind_per_task = false;
  int bind_count = 0;  // per_task:N's N, the GPUs bound to each task
};

// The request from Slurm's own strings: the step's TRES per node, task and
// step ("gres:gpu:2", "gres/gpu:a100:1", "cpu:2") and its TRES binding
// ("gpu:per_task:1"; slurmstepd's SLURMD_TRES_BIND). Pure.
DeviceRequest parse_device_request(std::string_view per_node, std::string_view per_task,
                                   std::string_view per_step, std::string_view bind);

// Whether Slurm confines each task to the devices it binds to it, from
// slurm.conf's TaskPlugin ("task/affinity,task/cgroup") and cgroup.conf's
// text (ConstrainDevices=yes): StepFacts::devices_confined. Pure.
bool slurm_confines_devices(std::string_view task_plugin, std::string_view cgroup_conf);

// Whether the step's device request can change its layout (--dp-tiles on a
// GPU site whose nodes' devices Slurm's gres describes): srun asks
// slurmctld for it only then.
bool device_request_matters(const Options& opts, const SiteConfig& site);
// The same for a step whose tasks run `command`: a per-node launcher's
// workers follow the GPUs the step asked for, which --dp-explain shows.
bool device_request_matters(const Options& opts, const SiteConfig& site,
                            const std::vector<std::string>& command);

struct StepFacts {
  StepShape shape;                 // srun: every node of the step; slurmstepd: its own node
  int task_count = 0;              // the step's tasks when `shape` holds only some nodes; 0: all
  std::vector<NodeDevices> nodes;  // one per shape.hosts entry; missing: unknown
  std::optional<DeviceRequest> request;  // nullopt: not known (nothing is capped)
  int node_count = 0;                    // the step's nodes when `shape` holds only some; 0: all
  std::vector<std::string> command;      // the tasks' argv (per-node launchers); empty: unknown
  // Slurm confines each task to the devices it binds to it (TaskPlugin
  // task/cgroup with cgroup.conf ConstrainDevices=yes): such a task cannot
  // open the node's other GPUs.
  bool devices_confined = false;
  Options options;
  SiteConfig site;
};

struct NodePlan {
  // Tiles the step may use on the node: its devices, capped by what the
  // step asked Slurm for; -1 when known only on the node at launch.
  int tiles = -1;
  NodeTiles devices;  // their mask entries
};

struct LayoutPlan {
  int world_size = 0;
  int tiles_per_task = 0;              // 0: no mask
  bool bound_per_task = false;         // a task's tiles are its own devices (Slurm bound them)
  std::vector<NodePlan> nodes;         // one per shape.hosts entry
  LaunchShape launch;                  // one task per node, per-node launchers
  StoreKind store = StoreKind::rank0;  // where PyTorch's ranks meet (step_store.hpp)
  int dp_port_count = 0;               // --dp-ports: held on rank 0's node (step_ports.hpp)
  // Per-task GPUs (kind=cuda, a task per rank): --dp-tiles, or the GPUs
  // Slurm binds to each task (--gpus-per-task) where --dp-tiles is not given
  // (`bound_tiles`). Each task's CUDA_VISIBLE_DEVICES then lists the node's
  // devices ordered so that cuda:LOCAL_RANK is its own first one, as a
  // per-node launcher's workers get them (`mask_by_local_rank`), unless
  // Slurm confines each task to its own: then `device_hint` says why a
  // script's cuda:LOCAL_RANK finds no device, and the fix.
  int bound_tiles = 0;
  bool mask_by_local_rank = false;
  std::string device_hint;
  // --dp-spares / --dp-max-restarts (spares.hpp): the last `spares` nodes
  // wait, and world_size counts the ranks of the others (a launcher step's
  // every launcher runs: torchrun's rendezvous keeps `spares` waiting).
  int spares = 0;
  int max_restarts = 0;    // the step's restart budget
  int tasks_per_node = 0;  // with spares or restarts: every node's, the same
  bool restarts = false;   // each task keeps its program (and may start it again)
  int active_nodes() const noexcept { return launch.nodes - spares; }
};

// The whole decision, or a refusal that names the option and the fix.
Result<LayoutPlan> plan_layout(const StepFacts& facts);

// The tiles a task of node `node` picks from: the node's, or where Slurm
// binds devices per task, the task's own (`task_visible`: what Slurm set in
// the task; srun knows none and uses the node's). With mask_by_local_rank,
// a task of local rank `local_rank` whose own devices are its share of the
// node's (Slurm binds them in local-rank order) picks from the node's.
Result<NodeTiles> task_tiles(const LayoutPlan& plan, const SiteConfig& site, size_t node,
                             const VisibleDevices& task_visible, int local_rank = -1);

// Per-task variables: torchrun's names (except MASTER_*), the mask variable
// of the site's kind and DP_TILES, and in a step of one task per node the
// PET_* variables of a per-node launcher (except PET_MASTER_*); a launcher's
// mask holds every worker's tiles (launcher.hpp). `tiles`: from task_tiles().
Result<EnvList> task_environment(const LayoutPlan& plan, const SiteConfig& site,
                                 const TaskPlace& place, const NodeTiles& tiles);

// Where the step's ranks meet, as a node knows it once set up; texts, so
// --dp-explain can say "auto(...)" before the ports exist.
struct StepMeeting {
  std::string master_addr;  // srun's MASTER_ADDR, rank 0's node (empty: not set)
  std::string master_port;  // the coordinator port; with --dp-store=step the node agent's store
  std::string coordinator;  // JAX's coordinator port
  std::string dp_ports;     // DP_PORTS; empty: none
};

// A task's whole environment from slurm-dp: task_environment's, then the
// step's store or MASTER_ADDR/MASTER_PORT, a launcher's PET_MASTER_*, JAX's
// coordinator and DP_PORTS. slurmstepd sets it as it is; --dp-explain prints it.
Result<EnvList> whole_task_environment(const LayoutPlan& plan, const SiteConfig& site,
                                       const TaskPlace& place, const NodeTiles& tiles,
                                       const StepMeeting& meeting);

// Every task of a step, in rank order (whole_task_environment, `dp_ports`
// empty: none): what --dp-explain prints and what the unit tests replay.
struct TaskEnvironment {
  int rank = 0;  // a spare's task: its Slurm task id
  std::string host;
  EnvList env;
  std::optional<Workers> workers;  // the task is a per-node launcher: its workers
  bool spare = false;              // parked until a lost node's place is its
};
Result<std::vector<TaskEnvironment>> step_environment(const LayoutPlan& plan,
                                                      const SiteConfig& site,
                                                      const StepShape& shape,
                                                      const std::string& master_addr,
                                                      const std::string& master_port,
                                                      const std::string& dp_ports = "");

// One readable line per task for --dp-explain, and for a launcher one more:
// its node rank, workers and each worker's devices.
std::vector<std::string> explain_lines(const std::vector<TaskEnvironment>& tasks);

}  // namespace dp
