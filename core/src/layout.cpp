#include "dp/layout.hpp"

#include <algorithm>
#include <string>

#include "dp/env_names.hpp"
#include "dp/shown_value.hpp"

namespace dp {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (comma > start) out.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Slurm's gres plugin writes this when a step has no device of the kind.
bool slurm_says_none(const std::string& v) { return v.empty() || v == "NoDevFiles"; }

}  // namespace

int StepShape::task_count() const noexcept {
  int n = 0;
  for (const auto& t : task_ids) n += static_cast<int>(t.size());
  return n;
}

int StepShape::host_of(int rank) const noexcept {
  for (size_t i = 0; i < task_ids.size(); ++i)
    if (std::find(task_ids[i].begin(), task_ids[i].end(), rank) != task_ids[i].end())
      return static_cast<int>(i);
  return -1;
}

Result<std::vector<int>> parse_tasks_per_node(std::string_view text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    std::string_view v(item);
    long long repeat = 1;
    auto paren = v.find('(');
    if (paren != std::string_view::npos) {
      if (v.size() < paren + 4 || v.substr(paren, 2) != "(x" || v.back() != ')')
        return make_error(Errc::invalid_argument, "tasks per node '" + shown_value(text) +
                                                      "': bad item '" + shown_value(item) + "'");
      auto r = parse_integer(v.substr(paren + 2, v.size() - paren - 3), 1, 1 << 20,
                             "tasks per node repeat", "2(x3)");
      DP_TRY(r);
      repeat = *r;
      v = v.substr(0, paren);
    }
    auto n = parse_integer(v, 0, 1 << 20, "tasks per node", "2(x3),1");
    DP_TRY(n);
    for (long long i = 0; i < repeat; ++i) out.push_back(static_cast<int>(*n));
  }
  if (out.empty())
    return make_error(Errc::invalid_argument, "tasks per node '" + shown_value(text) + "': empty");
  return out;
}

std::vector<std::vector<int>> assign_task_ids(const std::vector<int>& tasks_per_node,
                                              Distribution dist) {
  std::vector<std::vector<int>> ids(tasks_per_node.size());
  int next = 0;
  if (dist == Distribution::block) {
    for (size_t i = 0; i < tasks_per_node.size(); ++i)
      for (int j = 0; j < tasks_per_node[i]; ++j) ids[i].push_back(next++);
    return ids;
  }
  bool placed = true;
  while (placed) {
    placed = false;
    for (size_t i = 0; i < tasks_per_node.size(); ++i) {
      if (static_cast<int>(ids[i].size()) < tasks_per_node[i]) {
        ids[i].push_back(next++);
        placed = true;
      }
    }
  }
  return ids;
}

int gres_count(std::string_view gres, std::string_view name) {
  // Drop "(S:0-1)" socket annotations first: they contain ':' and ','.
  std::string plain;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    else if (c == ')') depth = std::max(0, depth - 1);
    else if (depth == 0) plain += c;
  }
  // Bounded, however many items the string lists: never an int overflow.
  constexpr long long kMaxDevices = 1 << 20;
  long long total = 0;
  for (const auto& item : split_list(plain)) {
    auto colon = item.find(':');
    if (item.substr(0, colon) != name || colon == std::string::npos) continue;
    auto last = item.rfind(':');
    auto n =
        parse_integer(std::string_view(item).substr(last + 1), 0, kMaxDevices, "gres", "gpu:4");
    if (n) total = std::min(total + *n, kMaxDevices);
  }
  return static_cast<int>(total);
}

Result<NodeTiles> node_tiles(const SiteConfig& site, const VisibleDevices& visible) {
  NodeTiles t;
  const int declared_devices = site.devices_per_node;
  switch (site.kind) {
    case AcceleratorKind::cuda:
      if (visible.cuda && !slurm_says_none(*visible.cuda)) {
        t.entries = split_list(*visible.cuda);
      } else {
        for (int d = 0; d < declared_devices; ++d) t.entries.push_back(std::to_string(d));
      }
      break;
    case AcceleratorKind::ze: {
      std::vector<std::string> devices;
      if (visible.ze && !slurm_says_none(*visible.ze)) {
        devices = split_list(*visible.ze);
      } else {
        for (int d = 0; d < declared_devices; ++d) devices.push_back(std::to_string(d));
      }
      for (const auto& d : devices) {
        if (d.find('.') != std::string::npos) {  // already a stack: one tile
          t.entries.push_back(d);
          continue;
        }
        for (int s = 0; s < site.tiles_per_device; ++s)
          t.entries.push_back(d + "." + std::to_string(s));
      }
      break;
    }
    case AcceleratorKind::rdu:
    case AcceleratorKind::none:
      for (int i = 0; i < site.declared_tiles_per_node(); ++i)
        t.entries.push_back(std::to_string(i));
      break;
  }
  return t;
}

std::string tile_bitmask(const std::vector<int>& tiles) {
  int top = -1;
  for (int t : tiles) top = std::max(top, t);
  if (top < 0) return "0x0";
  std::vector<int> nibbles(static_cast<size_t>(top / 4 + 1), 0);
  for (int t : tiles)
    if (t >= 0) nibbles[static_cast<size_t>(t / 4)] |= 1 << (t % 4);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "0x";
  for (auto it = nibbles.rbegin(); it != nibbles.rend(); ++it) out += kHex[*it];
  return out;
}

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

// "gpu:per_task:1", "gres/gpu:verbose,per_task:2+gres/nic:closest": GPUs bound per task.
bool binds_gpus_per_task(std::string_view bind) {
  size_t pos = 0;
  while (pos <= bind.size()) {
    const size_t end = std::min(bind.find('+', pos), bind.size());
    std::string_view item = bind.substr(pos, end - pos);
    pos = end + 1;
    if (item.substr(0, 5) == "gres/" || item.substr(0, 5) == "gres:") item.remove_prefix(5);
    if (item.substr(0, 4) != "gpu:") continue;
    for (const auto& flag : split_list(item.substr(4)))
      if (flag.rfind("per_task", 0) == 0) return true;
  }
  return false;
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
// A launcher's workers without --dp-tiles: one per GPU the step gets on the
// node, where the request says (srun's view; slurmstepd knows Slurm's list).
void cap_launcher_by_request(const StepFacts& f, LayoutPlan& plan) {
  const auto& hosts = f.shape.hosts;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (i < f.nodes.size() && f.nodes[i].given) continue;
    const int gpus = gpus_on_node(*f.request, 1, static_cast<int>(hosts.size()));
    NodePlan& n = plan.nodes[i];
    if (gpus < 0 || n.tiles < 0) continue;
    n.tiles = std::min(n.tiles, gpus);
    if (static_cast<int>(n.devices.entries.size()) > n.tiles) n.devices.entries.resize(n.tiles);
  }
}

Result<void> cap_by_request(const StepFacts& f, LayoutPlan& plan) {
  if (f.request && !f.options.tiles && !plan.launch.launcher.empty() &&
      device_request_matters(f.options, f.site, f.command)) {
    cap_launcher_by_request(f, plan);
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

}  // namespace

DeviceRequest parse_device_request(std::string_view per_node, std::string_view per_task,
                                   std::string_view per_step, std::string_view bind) {
  return DeviceRequest{gpus_in(per_node), gpus_in(per_task), gpus_in(per_step),
                       binds_gpus_per_task(bind)};
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
  return gpus && site.declared_tiles_per_node() == 0 && launcher;
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
  auto store = store_kind(f.options, f.site, plan.launch);
  DP_TRY(store);
  plan.store = *store;
  plan.bound_per_task = f.request.has_value() && f.request->bind_per_task;
  for (size_t i = 0; i < f.shape.hosts.size(); ++i)
    plan.nodes.push_back(node_plan(f.site, i < f.nodes.size() ? f.nodes[i] : NodeDevices{}));
  DP_TRY(cap_by_request(f, plan));
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
                             const VisibleDevices& task_visible) {
  const auto& own = site.kind == AcceleratorKind::ze ? task_visible.ze : task_visible.cuda;
  const bool gpus = site.kind == AcceleratorKind::cuda || site.kind == AcceleratorKind::ze;
  if (plan.bound_per_task && gpus && own && !slurm_says_none(*own)) {
    auto t = node_tiles(site, task_visible);
    DP_TRY(t);
    t->per_task = true;
    return t;
  }
  if (node >= plan.nodes.size())
    return make_error(Errc::internal, "no node " + std::to_string(node) + " in the step's plan");
  return plan.nodes[node].devices;
}

namespace {

// The mask variable of the site's kind for `entries`, and DP_TILES.
Result<void> add_mask(EnvList& env, const SiteConfig& site, const std::vector<std::string>& entries,
                      const std::vector<int>& indices) {
  std::vector<std::string> idx_text;
  for (int i : indices) idx_text.push_back(std::to_string(i));
  switch (site.kind) {
    case AcceleratorKind::cuda: env.emplace_back(env::kCudaVisibleDevices, join(entries)); break;
    case AcceleratorKind::ze: env.emplace_back(env::kZeAffinityMask, join(entries)); break;
    case AcceleratorKind::rdu: {
      std::vector<int> bits;
      for (const auto& e : entries) {
        auto bit = parse_integer(e, 0, 1 << 20, "tile", "3");
        DP_TRY(bit);
        bits.push_back(static_cast<int>(*bit));
      }
      env.emplace_back(env::kRduTileAffinity, tile_bitmask(bits));
      break;
    }
    case AcceleratorKind::none: break;
  }
  env.emplace_back(env::kTiles, join(idx_text));
  return {};
}

// A task's own K tiles: its first K where Slurm bound devices to it, else
// its share of the node's.
Result<void> task_share(const LayoutPlan& plan, const TaskPlace& place, const NodeTiles& tiles,
                        std::vector<std::string>& mine, std::vector<int>& indices) {
  const int k = plan.tiles_per_task;
  const int have = static_cast<int>(tiles.entries.size());
  if (tiles.per_task) {
    if (have < k)
      return make_error(
          Errc::invalid_argument,
          "--dp-tiles=" + std::to_string(k) + ": Slurm bound " + std::to_string(have) +
              " device(s) to task " + std::to_string(place.rank) +
              "; request at least that many per task (--gpus-per-task=" + std::to_string(k) +
              ") or use --dp-tiles=" + std::to_string(std::max(have, 1)));
    for (int i = 0; i < k; ++i) {
      mine.push_back(tiles.entries[static_cast<size_t>(i)]);
      indices.push_back(place.local_rank * k + i);
    }
    return {};
  }
  const int first = place.local_rank * k;
  if (first + k > have)
    return make_error(Errc::invalid_argument,
                      "--dp-tiles=" + std::to_string(k) + ": local task " +
                          std::to_string(place.local_rank) + " needs tiles " +
                          std::to_string(first) + "-" + std::to_string(first + k - 1) +
                          " but this node gives the step only " + std::to_string(have) +
                          "; request more devices (--gres/--gpus) or use fewer tiles per task");
  for (int i = first; i < first + k; ++i) {
    mine.push_back(tiles.entries[static_cast<size_t>(i)]);
    indices.push_back(i);
  }
  return {};
}

// A per-node launcher: every worker's tiles in one mask, PET_*.
Result<EnvList> launcher_task_environment(const LayoutPlan& plan, const SiteConfig& site,
                                          const TaskPlace& place, const NodeTiles& tiles,
                                          EnvList env) {
  auto workers = plan_workers(tiles.entries, plan.tiles_per_task);
  DP_TRY(workers);
  for (auto& v : launcher_environment(plan.launch, place.rank, *workers))
    env.push_back(std::move(v));
  if (plan.tiles_per_task > 0) DP_TRY(add_mask(env, site, workers->mask, workers->indices));
  return env;
}

}  // namespace

Result<EnvList> task_environment(const LayoutPlan& plan, const SiteConfig& site,
                                 const TaskPlace& place, const NodeTiles& tiles) {
  EnvList env = {
      {env::kRank, std::to_string(place.rank)},
      {env::kLocalRank, std::to_string(place.local_rank)},
      {env::kWorldSize, std::to_string(plan.world_size)},
      {env::kLocalWorldSize, std::to_string(place.local_world_size)},
      {env::kNodeRank, std::to_string(place.node_rank)},
      {env::kGroupRank, std::to_string(place.node_rank)},
  };
  if (!plan.launch.launcher.empty())
    return launcher_task_environment(plan, site, place, tiles, std::move(env));
  const int k = plan.tiles_per_task;
  // A plain task of a one-task-per-node step: one worker per tile it sees,
  // should it start a launcher slurm-dp did not recognise.
  Workers seen;
  seen.count = k > 0 ? k : static_cast<int>(tiles.entries.size());
  for (auto& v : launcher_environment(plan.launch, place.rank, seen)) env.push_back(std::move(v));
  if (k == 0) return env;
  std::vector<std::string> mine;
  std::vector<int> indices;
  DP_TRY(task_share(plan, place, tiles, mine, indices));
  DP_TRY(add_mask(env, site, mine, indices));
  return env;
}

Result<std::vector<TaskEnvironment>> step_environment(const LayoutPlan& plan,
                                                      const SiteConfig& site,
                                                      const StepShape& shape,
                                                      const std::string& master_addr,
                                                      const std::string& master_port) {
  std::vector<TaskEnvironment> out;
  for (size_t h = 0; h < shape.hosts.size(); ++h) {
    const auto& ids = shape.task_ids[h];
    auto tiles = task_tiles(plan, site, h, {});
    DP_TRY(tiles);
    for (size_t j = 0; j < ids.size(); ++j) {
      TaskPlace place{ids[j], static_cast<int>(j), static_cast<int>(ids.size()),
                      static_cast<int>(h)};
      auto env = task_environment(plan, site, place, *tiles);
      if (!env)
        return make_error(env.error().code, env.error().message + " (node " + shape.hosts[h] + ")");
      if (plan.store == StoreKind::step) {
        for (auto& v : store_environment(plan.store, "(" + shape.hosts[h] + "'s agent store)"))
          env->push_back(std::move(v));
      } else {
        env->emplace_back(env::kMasterAddr, master_addr);
        env->emplace_back(env::kMasterPort, master_port);
      }
      for (auto& v : launcher_master_environment(plan.launch, master_addr, master_port))
        env->push_back(std::move(v));
      std::optional<Workers> workers;
      if (!plan.launch.launcher.empty()) {
        auto w = plan_workers(tiles->entries, plan.tiles_per_task);
        DP_TRY(w);
        workers = std::move(*w);
      }
      out.push_back({ids[j], shape.hosts[h], std::move(*env), std::move(workers)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TaskEnvironment& a, const TaskEnvironment& b) { return a.rank < b.rank; });
  return out;
}

namespace {

std::string launcher_line(const TaskEnvironment& t) {
  const Workers& w = *t.workers;
  std::string nodes = "?";
  for (const auto& [k, v] : t.env)
    if (k == env::kPetNnodes) nodes = v;
  std::string line =
      "launcher on " + t.host + ": node rank " + std::to_string(t.rank) + " of " + nodes + " nodes";
  if (w.count == 0)
    return line + ", workers: the launcher's --nproc-per-node (no devices known here)";
  line += ", " + std::to_string(w.count) + " worker(s);";
  for (int i = 0; i < w.count; ++i)
    line += std::string(i > 0 ? ";" : "") + " worker " + std::to_string(i) + ": " +
            join(w.devices[static_cast<size_t>(i)]);
  return line;
}

}  // namespace

std::vector<std::string> explain_lines(const std::vector<TaskEnvironment>& tasks) {
  std::vector<std::string> lines;
  for (const auto& t : tasks) {
    std::string line = "task " + std::to_string(t.rank) + " on " + t.host + ":";
    for (const auto& [k, v] : t.env) line += " " + k + "=" + v;
    lines.push_back(std::move(line));
    if (t.workers) lines.push_back(launcher_line(t));
  }
  return lines;
}

}  // namespace dp
