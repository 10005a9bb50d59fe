#include "dp/layout.hpp"

#include <algorithm>
#include <string>

#include "dp/env_names.hpp"

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
        return make_error(Errc::invalid_argument,
                          "tasks per node '" + std::string(text) + "': bad item '" + item + "'");
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
    return make_error(Errc::invalid_argument, "tasks per node '" + std::string(text) + "': empty");
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

Result<StepPlan> plan_step(const Options& opts, const SiteConfig& site, const StepShape& shape,
                           const std::vector<int>& node_tiles) {
  const int tasks = shape.task_count();
  if (tasks <= 0 || shape.hosts.size() != shape.task_ids.size())
    return make_error(Errc::internal, "the step's layout from Slurm is empty or inconsistent");
  std::vector<bool> seen(static_cast<size_t>(tasks), false);
  for (const auto& ids : shape.task_ids)
    for (int id : ids) {
      if (id < 0 || id >= tasks || seen[static_cast<size_t>(id)])
        return make_error(Errc::internal, "the step's task ids from Slurm are not 0.." +
                                              std::to_string(tasks - 1) + " exactly once");
      seen[static_cast<size_t>(id)] = true;
    }

  StepPlan plan;
  plan.world_size = tasks;
  if (opts.world && *opts.world != 0 && *opts.world != tasks)
    return make_error(Errc::invalid_argument,
                      "--dp-world=" + std::to_string(*opts.world) + ": this step has " +
                          std::to_string(tasks) + " tasks; use --dp-world=auto or make the step " +
                          std::to_string(*opts.world) + " tasks (-n/--ntasks-per-node)");
  plan.tiles_per_task = opts.tiles.value_or(0);
  if (plan.tiles_per_task == 0) return plan;

  const std::string opt = "--dp-tiles=" + std::to_string(plan.tiles_per_task);
  if (site.kind == AcceleratorKind::none && site.declared_tiles_per_node() == 0)
    return make_error(Errc::invalid_argument,
                      opt + ": this site has no accelerators (kind=none); drop --dp-tiles");
  for (size_t i = 0; i < shape.hosts.size(); ++i) {
    const int have = i < node_tiles.size() ? node_tiles[i] : -1;
    if (have < 0) continue;
    const int local = static_cast<int>(shape.task_ids[i].size());
    const long long need = static_cast<long long>(local) * plan.tiles_per_task;
    if (need <= have) continue;
    std::string fix = have >= local && local > 0
                          ? "use --dp-tiles=" + std::to_string(have / local) + " or fewer"
                          : "use fewer";
    fix += " tasks per node (at most " + std::to_string(have / plan.tiles_per_task) + " with " +
           opt + ")";
    if (have / plan.tiles_per_task == 0)
      fix = "the node cannot hold one task with " + opt +
            "; use --dp-tiles=" + std::to_string(std::max(have, 1));
    return make_error(Errc::invalid_argument, opt + ": node " + shape.hosts[i] + " runs " +
                                                  std::to_string(local) + " tasks needing " +
                                                  std::to_string(need) + " tiles but has " +
                                                  std::to_string(have) + "; " + fix);
  }
  return plan;
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
  int total = 0;
  for (const auto& item : split_list(plain)) {
    auto colon = item.find(':');
    if (item.substr(0, colon) != name || colon == std::string::npos) continue;
    auto last = item.rfind(':');
    auto n = parse_integer(std::string_view(item).substr(last + 1), 0, 1 << 20, "gres", "gpu:4");
    if (n) total += static_cast<int>(*n);
  }
  return total;
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

Result<EnvList> task_environment(const StepPlan& plan, const SiteConfig& site,
                                 const TaskPlace& place, const NodeTiles& tiles) {
  EnvList env = {
      {env::kRank, std::to_string(place.rank)},
      {env::kLocalRank, std::to_string(place.local_rank)},
      {env::kWorldSize, std::to_string(plan.world_size)},
      {env::kLocalWorldSize, std::to_string(place.local_world_size)},
      {env::kNodeRank, std::to_string(place.node_rank)},
      {env::kGroupRank, std::to_string(place.node_rank)},
  };
  const int k = plan.tiles_per_task;
  if (k == 0) return env;

  const int have = static_cast<int>(tiles.entries.size());
  std::vector<std::string> mine;
  std::vector<int> indices;
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
  } else {
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
  }

  std::vector<std::string> idx_text;
  for (int i : indices) idx_text.push_back(std::to_string(i));
  switch (site.kind) {
    case AcceleratorKind::cuda: env.emplace_back(env::kCudaVisibleDevices, join(mine)); break;
    case AcceleratorKind::ze: env.emplace_back(env::kZeAffinityMask, join(mine)); break;
    case AcceleratorKind::rdu: {
      std::vector<int> bits;
      for (const auto& e : mine) {
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
  return env;
}

Result<std::vector<TaskEnvironment>> step_environment(const StepPlan& plan, const SiteConfig& site,
                                                      const StepShape& shape,
                                                      const std::vector<NodeTiles>& tiles_per_host,
                                                      const std::string& master_addr,
                                                      const std::string& master_port) {
  std::vector<TaskEnvironment> out;
  for (size_t h = 0; h < shape.hosts.size(); ++h) {
    const auto& ids = shape.task_ids[h];
    NodeTiles none;
    const NodeTiles& tiles = h < tiles_per_host.size() ? tiles_per_host[h] : none;
    for (size_t j = 0; j < ids.size(); ++j) {
      TaskPlace place{ids[j], static_cast<int>(j), static_cast<int>(ids.size()),
                      static_cast<int>(h)};
      auto env = task_environment(plan, site, place, tiles);
      if (!env)
        return make_error(env.error().code, env.error().message + " (node " + shape.hosts[h] + ")");
      env->emplace_back("MASTER_ADDR", master_addr);
      env->emplace_back("MASTER_PORT", master_port);
      out.push_back({ids[j], shape.hosts[h], std::move(*env)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const TaskEnvironment& a, const TaskEnvironment& b) { return a.rank < b.rank; });
  return out;
}

std::vector<std::string> explain_lines(const std::vector<TaskEnvironment>& tasks) {
  std::vector<std::string> lines;
  for (const auto& t : tasks) {
    std::string line = "task " + std::to_string(t.rank) + " on " + t.host + ":";
    for (const auto& [k, v] : t.env) line += " " + k + "=" + v;
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace dp
