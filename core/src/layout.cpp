// The one decision (plan_layout): world, tiles per task, per-node plans, the
// launch shape and the store, or a refusal naming the option and the fix.
// Facts are step_facts.cpp's; what each task is told, task_environment.cpp's.
#include "dp/layout.hpp"
#include "dp/step_ports.hpp"

#include <algorithm>
#include <string>

#include "dp/env_names.hpp"
#include "dp/params.hpp"
#include "dp/shown_value.hpp"
#include "dp/spares.hpp"
#include "layout_text.hpp"

namespace dp {

using layout_text::join;
using layout_text::slurm_says_none;
using layout_text::split_list;

// ---- The one entry ----

namespace {

// GPUs named in a step's TRES request. Slurm 22.05 writes "gres:gpu:2";
// 24.11 writes "gres/gpu:2" per node and "gres/gpu=2" per task, and repeats
// --gpus-per-node's item ("gres/gpu:2,gres/gpu:2"): an item counts once, in
// gres_count's form "gpu:2".
int gpus_in(std::string_view tres) {
  std::vector<std::string> items;
  for (const auto& item : split_list(tres)) {
    std::string_view v(item);
    if (v.substr(0, 5) == "gres:" || v.substr(0, 5) == "gres/") v.remove_prefix(5);
    std::string plain(v);
    std::replace(plain.begin(), plain.end(), '=', ':');
    if (std::find(items.begin(), items.end(), plain) == items.end()) items.push_back(plain);
  }
  return gres_count(join(items), "gpu");
}

// "gpu:per_task:1", "gres/gpu:verbose,per_task:2+gres/nic:closest": the GPUs
// bound to each task (per_task without a count: 1); 0: none bound per task.
int gpus_bound_per_task(std::string_view bind) {
  size_t pos = 0;
  while (pos <= bind.size()) {
    const size_t end = std::min(bind.find('+', pos), bind.size());
    std::string_view item = bind.substr(pos, end - pos);
    pos = end + 1;
    if (item.substr(0, 5) == "gres/" || item.substr(0, 5) == "gres:") item.remove_prefix(5);
    if (item.substr(0, 4) != "gpu:") continue;
    for (const auto& flag : split_list(item.substr(4))) {
      if (flag.rfind("per_task", 0) != 0) continue;
      auto n = parse_whole_number(flag.size() > 9 ? flag.substr(9) : "1", 1, 1 << 20);
      return n ? static_cast<int>(*n) : 1;
    }
  }
  return 0;
}

// GPUs the step gets on a node running `tasks_on_node` of its tasks, in a
// step of `nodes` nodes: 0 when it asked for none, -1 when not knowable
// (--gpus spread over several nodes).
int gpus_on_node(const DeviceRequest& req, int tasks_on_node, int nodes) {
  if (req.per_node > 0) return req.per_node;
  if (req.per_task > 0) return req.per_task * tasks_on_node;
  if (req.per_step > 0) return nodes == 1 ? req.per_step : -1;
  return 0;
}

// Every host holds its task ids once, all below the step's task count; a
// shape of the whole step holds them all.
Result<int> checked_task_count(const StepShape& shape, int task_count) {
  const int held = shape.task_count();
  const int tasks = task_count > 0 ? task_count : held;
  if (held <= 0 || held > tasks || shape.hosts.size() != shape.task_ids.size())
    return make_error(Errc::internal, "the step's layout from Slurm is empty or inconsistent");
  std::vector<bool> seen(static_cast<size_t>(tasks), false);
  for (const auto& ids : shape.task_ids)
    for (int id : ids) {
      if (id < 0 || id >= tasks || seen[static_cast<size_t>(id)])
        return make_error(Errc::internal, "the step's task ids from Slurm are not 0.." +
                                              std::to_string(tasks - 1) + " exactly once");
      seen[static_cast<size_t>(id)] = true;
    }
  return tasks;
}

// A node's devices as the site's kind counts them: what Slurm gave the step
// there, else the site's declaration, else (GPUs) the node's gres.
NodePlan node_plan(const SiteConfig& site, const NodeDevices& devices) {
  NodePlan p;
  SiteConfig as_node = site;
  const bool gpus = site.kind == AcceleratorKind::cuda || site.kind == AcceleratorKind::ze;
  if (gpus && !devices.given && site.declared_tiles_per_node() == 0) {
    if (!devices.gres) return p;  // known only on the node, at launch
    as_node.devices_per_node = gres_count(*devices.gres, "gpu");
  }
  auto t = node_tiles(as_node, devices.given.value_or(VisibleDevices{}));
  if (t) p.devices = std::move(*t);
  p.tiles = static_cast<int>(p.devices.entries.size());
  return p;
}

// Where Slurm's gres decides which devices a task sees, the tiles a node
// offers the step are capped by the GPUs the step asked for: a request that
// cannot be met is refused before launch, naming the option to add.
// Without --dp-tiles, a launcher's workers (one per GPU) and tasks bound to
// GPUs of their own see what the step gets on the node, where the request
// says (srun's view; slurmstepd knows Slurm's list).
void cap_nodes_by_request(const StepFacts& f, LayoutPlan& plan, bool launcher) {
  const auto& hosts = f.shape.hosts;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i < f.nodes.size() && f.nodes[i].given) continue;
    const int tasks = launcher ? 1 : static_cast<int>(f.shape.task_ids[i].size());
    const int gpus = gpus_on_node(*f.request, tasks, static_cast<int>(hosts.size()));
    NodePlan& n = plan.nodes[i];
    if (gpus < 0 || n.tiles < 0) continue;
    n.tiles = std::min(n.tiles, gpus);
    if (static_cast<int>(n.devices.entries.size()) > n.tiles) n.devices.entries.resize(n.tiles);
  }
}

Result<void> cap_by_request(const StepFacts& f, LayoutPlan& plan) {
  if (f.request && !f.options.tiles && device_request_matters(f.options, f.site, f.command)) {
    const bool launcher = !plan.launch.launcher.empty();
    if (launcher || f.request->bind_per_task) cap_nodes_by_request(f, plan, launcher);
    return {};
  }
  if (!f.request || !device_request_matters(f.options, f.site)) return {};
  const int k = *f.options.tiles;
  const int per_gpu = f.site.kind == AcceleratorKind::ze ? std::max(f.site.tiles_per_device, 1) : 1;
  const std::string add = "add --gpus-per-task=" + std::to_string((k + per_gpu - 1) / per_gpu) +
                          " to srun (or sbatch), or --gres=gpu:N with N GPUs per node";
  const auto& hosts = f.shape.hosts;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i < f.nodes.size() && f.nodes[i].given) continue;  // Slurm's own list already
    const int local = static_cast<int>(f.shape.task_ids[i].size());
    const int gpus = gpus_on_node(*f.request, local, static_cast<int>(hosts.size()));
    if (gpus < 0) continue;
    const long long need = static_cast<long long>(local) * k;
    if (gpus == 0 || static_cast<long long>(gpus) * per_gpu < need)
      return make_error(Errc::invalid_argument,
                        "--dp-tiles=" + std::to_string(k) + ": the step asks Slurm for " +
                            std::to_string(gpus) + " GPUs on node " + hosts[i] + ", whose " +
                            std::to_string(local) + " tasks need " + std::to_string(need) +
                            " tiles; " + add);
    NodePlan& n = plan.nodes[i];
    n.tiles = n.tiles < 0 ? gpus * per_gpu : std::min(n.tiles, gpus * per_gpu);
    if (static_cast<int>(n.devices.entries.size()) > n.tiles) n.devices.entries.resize(n.tiles);
  }
  return {};
}

// Each node whose tiles are known holds its tasks' tiles.
Result<void> check_node_tiles(const StepShape& shape, const LayoutPlan& plan) {
  const int k = plan.tiles_per_task;
  const std::string opt = "--dp-tiles=" + std::to_string(k);
  for (size_t i = 0; i < shape.hosts.size(); ++i) {
    const int have = plan.nodes[i].tiles;
    if (have < 0) continue;
    const int local = static_cast<int>(shape.task_ids[i].size());
    const long long need = static_cast<long long>(local) * k;
    if (need <= have) continue;
    std::string fix = have >= local && local > 0
                          ? "use --dp-tiles=" + std::to_string(have / local) + " or fewer"
                          : "use fewer";
    fix += " tasks per node (at most " + std::to_string(have / k) + " with " + opt + ")";
    if (have / k == 0)
      fix = "the node cannot hold one task with " + opt +
            "; use --dp-tiles=" + std::to_string(std::max(have, 1));
    return make_error(Errc::invalid_argument, opt + ": node " + shape.hosts[i] + " runs " +
                                                  std::to_string(local) + " tasks needing " +
                                                  std::to_string(need) + " tiles but has " +
                                                  std::to_string(have) + "; " + fix);
  }
  return {};
}

// Per-task GPUs on a CUDA site (LayoutPlan::mask_by_local_rank): every
// task's mask lists the node's devices with its own first one at index
// LOCAL_RANK, so scripts that name cuda:LOCAL_RANK (PyTorch's examples, JAX's
// default local_device_ids) find their own GPU, unless Slurm confines each
// task to the devices it binds to it: then it sees only its own, as cuda:0.
void decide_task_masks(const StepFacts& f, LayoutPlan& plan) {
  if (f.site.kind != AcceleratorKind::cuda || !plan.launch.launcher.empty()) return;
  if (!f.options.tiles && plan.bound_per_task)
    plan.bound_tiles = std::max(f.request->bind_count, 1);
  const int k = f.options.tiles.value_or(plan.bound_tiles);
  if (k <= 0) return;
  if (!(plan.bound_per_task && f.devices_confined)) {
    plan.mask_by_local_rank = true;
    return;
  }
  size_t most = 0;
  for (const auto& ids : f.shape.task_ids) most = std::max(most, ids.size());
  if (most <= static_cast<size_t>(k)) return;  // cuda:LOCAL_RANK is one of the task's own
  plan.device_hint =
      "--gpus-per-task: Slurm binds each task to its own GPU and this site confines tasks to "
      "their devices (cgroup.conf ConstrainDevices=yes), so each task sees only its own, "
      "numbered from cuda:0: a script's cuda:LOCAL_RANK names no device for local ranks " +
      std::to_string(k) + " and up. Ask --gpus-per-node=N instead of --gpus-per-task, so " +
      "that CUDA_VISIBLE_DEVICES lists the node's GPUs of the step with cuda:LOCAL_RANK each " +
      "task's own, or use cuda:0 in the script";
}

// --dp-world=N must be the step's task count; in a launcher's step that
// counts the launchers, not torchrun's workers.
Result<void> check_world(const Options& opts, const LayoutPlan& plan) {
  if (!opts.world || *opts.world == 0 || *opts.world == plan.world_size) return {};
  const std::string opt = "--dp-world=" + std::to_string(*opts.world);
  if (!plan.launch.launcher.empty())
    return make_error(Errc::invalid_argument,
                      opt + ": in a " + plan.launch.launcher +
                          " step --dp-world counts the launchers, one per node (this step has " +
                          std::to_string(plan.world_size) +
                          "); use --dp-world=auto: the workers' world is nodes x workers per " +
                          "node (--nproc-per-node, or the node's devices)");
  return make_error(Errc::invalid_argument,
                    opt + ": this step has " + std::to_string(plan.world_size) +
                        " tasks; use --dp-world=auto or make the step " +
                        std::to_string(*opts.world) + " tasks (-n/--ntasks-per-node)");
}

// --dp-spares and --dp-max-restarts: the one shape (spares.hpp) the plan
// carries to the tasks.
Result<void> plan_restarts(const StepFacts& f, int tasks, int nodes, LayoutPlan& plan) {
  RestartAsk ask{tasks, nodes, {}, plan.launch.launcher};
  for (const auto& ids : f.shape.task_ids)
    ask.tasks_by_node.push_back(static_cast<int>(ids.size()));
  auto shape = restart_shape(f.options, f.site, ask);
  if (!shape) return shape.error();
  if (!*shape) return {};
  plan.spares = (*shape)->spares;
  plan.launch.spares = (*shape)->keepers ? 0 : (*shape)->spares;
  plan.tasks_per_node = (*shape)->tasks_per_node;
  plan.world_size = (*shape)->world_size;
  plan.restarts = (*shape)->keepers;
  plan.max_restarts = (*shape)->max_restarts;
  return {};
}

}  // namespace

DeviceRequest parse_device_request(std::string_view per_node, std::string_view per_task,
                                   std::string_view per_step, std::string_view bind) {
  const int bound = gpus_bound_per_task(bind);
  return DeviceRequest{gpus_in(per_node), gpus_in(per_task), gpus_in(per_step), bound > 0, bound};
}

bool device_request_matters(const Options& opts, const SiteConfig& site) {
  return opts.tiles.has_value() && site.declared_tiles_per_node() == 0 &&
         (site.kind == AcceleratorKind::cuda || site.kind == AcceleratorKind::ze);
}

bool device_request_matters(const Options& opts, const SiteConfig& site,
                            const std::vector<std::string>& command) {
  if (device_request_matters(opts, site)) return true;
  const bool gpus = site.kind == AcceleratorKind::cuda || site.kind == AcceleratorKind::ze;
  const Launcher mode = opts.launcher.value_or(Launcher::auto_detect);
  const bool launcher = mode == Launcher::torchrun ||
                        (mode == Launcher::auto_detect && !launcher_in_command(command).empty());
  // A task per rank on a CUDA site: GPUs bound per task make its mask.
  const bool per_task = !launcher && site.kind == AcceleratorKind::cuda;
  return gpus && site.declared_tiles_per_node() == 0 && (launcher || per_task);
}

Result<LayoutPlan> plan_layout(const StepFacts& f) {
  auto tasks = checked_task_count(f.shape, f.task_count);
  DP_TRY(tasks);
  LayoutPlan plan;
  plan.world_size = *tasks;
  const int nodes = f.node_count > 0 ? f.node_count : static_cast<int>(f.shape.hosts.size());
  auto launch = launch_shape(f.options, f.command, nodes, *tasks);
  DP_TRY(launch);
  plan.launch = std::move(*launch);
  DP_TRY(plan_restarts(f, *tasks, nodes, plan));
  auto store = store_kind(f.options, f.site, plan.launch);
  DP_TRY(store);
  plan.store = *store;
  auto ports = checked_port_count(f.options, f.site);
  DP_TRY(ports);
  plan.dp_port_count = *ports;
  plan.bound_per_task = f.request.has_value() && f.request->bind_per_task;
  for (size_t i = 0; i < f.shape.hosts.size(); ++i)
    plan.nodes.push_back(node_plan(f.site, i < f.nodes.size() ? f.nodes[i] : NodeDevices{}));
  DP_TRY(cap_by_request(f, plan));
  decide_task_masks(f, plan);
  const Options& opts = f.options;
  DP_TRY(check_world(opts, plan));
  plan.tiles_per_task = opts.tiles.value_or(0);
  if (plan.tiles_per_task == 0) return plan;
  if (f.site.kind == AcceleratorKind::none && f.site.declared_tiles_per_node() == 0)
    return make_error(Errc::invalid_argument,
                      "--dp-tiles=" + std::to_string(plan.tiles_per_task) +
                          ": this site has no accelerators (kind=none); drop --dp-tiles");
  DP_TRY(check_node_tiles(f.shape, plan));
  return plan;
}

Result<NodeTiles> task_tiles(const LayoutPlan& plan, const SiteConfig& site, size_t node,
                             const VisibleDevices& task_visible, int local_rank) {
  if (node >= plan.nodes.size())
    return make_error(Errc::internal, "no node " + std::to_string(node) + " in the step's plan");
  NodeTiles all = plan.nodes[node].devices;
  const auto& own = site.kind == AcceleratorKind::ze ? task_visible.ze : task_visible.cuda;
  const bool gpus = site.kind == AcceleratorKind::cuda || site.kind == AcceleratorKind::ze;
  if (plan.bound_per_task && gpus && own && !slurm_says_none(*own)) {
    auto t = node_tiles(site, task_visible);
    DP_TRY(t);
    // Its own share of the node's, in local-rank order, as Slurm binds them:
    // the node's list, ordered for cuda:LOCAL_RANK (task_environment).
    const size_t k = t->entries.size(), first = static_cast<size_t>(std::max(local_rank, 0)) * k;
    if (plan.mask_by_local_rank && local_rank >= 0 && k > 0 && first + k <= all.entries.size() &&
        std::equal(t->entries.begin(), t->entries.end(), all.entries.begin() + first)) {
      all.bound = static_cast<int>(k);
      return all;
    }
    t->per_task = true;
    return t;
  }
  if (plan.bound_tiles > 0) all.bound = plan.bound_tiles;  // srun's view of a bound step
  return all;
}

}  // namespace dp
