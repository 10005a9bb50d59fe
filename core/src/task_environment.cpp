// What each task is told (task_environment, whole_task_environment,
// step_environment) and what --dp-explain prints, from the plan.
#include <algorithm>
#include <string>

#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/shown_value.hpp"
#include "dp/spares.hpp"
#include "dp/step_ports.hpp"
#include "layout_text.hpp"

namespace dp {

using layout_text::join;
using layout_text::slurm_says_none;
using layout_text::split_list;

namespace {

// The mask variable of the site's kind for `entries`, and DP_TILES (unless
// the step gave no --dp-tiles: `indices` empty).
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
  if (!indices.empty()) env.emplace_back(env::kTiles, join(idx_text));
  return {};
}

// A task's own K tiles: its first K where Slurm bound devices to it, else
// its share of the node's.
Result<void> task_share(int k, const TaskPlace& place, const NodeTiles& tiles,
                        std::vector<std::string>& mine, std::vector<int>& indices) {
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
  // Without --dp-tiles, the GPUs Slurm bound to the task make its mask.
  const int own = k > 0 ? k : (plan.mask_by_local_rank ? tiles.bound : 0);
  if (own == 0) return env;
  std::vector<std::string> mine;
  std::vector<int> indices;
  DP_TRY(task_share(own, place, tiles, mine, indices));
  if (k == 0) indices.clear();
  if (plan.mask_by_local_rank && !tiles.per_task) {
    // The node's tasks' devices (no other), every local task's first at its
    // LOCAL_RANK; its tiles (DP_TILES) are then their CUDA ordinals there.
    const size_t used =
        std::min(tiles.entries.size(), static_cast<size_t>(place.local_world_size) * own);
    auto ordered = plan_workers({tiles.entries.begin(), tiles.entries.begin() + used}, own);
    DP_TRY(ordered);
    mine = std::move(ordered->mask);
    for (int& i : indices)
      i = static_cast<int>(std::find(ordered->indices.begin(), ordered->indices.end(), i) -
                           ordered->indices.begin());
  }
  DP_TRY(add_mask(env, site, mine, indices));
  return env;
}

Result<EnvList> whole_task_environment(const LayoutPlan& plan, const SiteConfig& site,
                                       const TaskPlace& place, const NodeTiles& tiles,
                                       const StepMeeting& meeting) {
  auto env = task_environment(plan, site, place, tiles);
  DP_TRY(env);
  if (plan.store == StoreKind::step) {
    for (auto& v : store_environment(plan.store, meeting.master_port)) env->push_back(std::move(v));
  } else {
    if (!meeting.master_addr.empty()) env->emplace_back(env::kMasterAddr, meeting.master_addr);
    env->emplace_back(env::kMasterPort, meeting.master_port);
  }
  for (auto& v : launcher_master_environment(plan.launch, meeting.master_addr, meeting.master_port))
    env->push_back(std::move(v));
  for (auto& v : ports_environment(meeting.master_addr, meeting.coordinator, meeting.dp_ports))
    env->push_back(std::move(v));
  return env;
}

Result<std::vector<TaskEnvironment>> step_environment(
    const LayoutPlan& plan, const SiteConfig& site, const StepShape& shape,
    const std::string& master_addr, const std::string& master_port, const std::string& dp_ports) {
  std::vector<TaskEnvironment> out;
  for (size_t h = 0; h < shape.hosts.size(); ++h) {
    const auto& ids = shape.task_ids[h];
    auto tiles = task_tiles(plan, site, h, {});
    DP_TRY(tiles);
    const StepMeeting meeting{
        master_addr,
        plan.store == StoreKind::step ? "(" + shape.hosts[h] + "'s agent store)" : master_port,
        master_port, dp_ports};
    const int node = static_cast<int>(h);
    for (size_t j = 0; j < ids.size(); ++j) {
      if (plan.restarts && plan.spares > 0 && node >= plan.active_nodes()) {  // parked until a loss
        out.push_back({ids[j], shape.hosts[h], {}, std::nullopt, true});
        continue;
      }
      TaskPlace place{ids[j], static_cast<int>(j), static_cast<int>(ids.size()), node};
      if (plan.restarts) place = acting_place(node, static_cast<int>(j), plan.tasks_per_node);
      auto env = whole_task_environment(plan, site, place, *tiles, meeting);
      if (!env)
        return wrap_error(env.error(), env.error().message + " (node " + shape.hosts[h] + ")");
      std::optional<Workers> workers;
      if (!plan.launch.launcher.empty()) {
        auto w = plan_workers(tiles->entries, plan.tiles_per_task);
        DP_TRY(w);
        workers = std::move(*w);
      }
      out.push_back({ids[j], shape.hosts[h], std::move(*env), std::move(workers), false});
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
  bool elastic = false;
  for (const auto& [k, v] : t.env) {
    if (k == env::kPetNnodes) nodes = v;
    if (k == env::kPetRdzvBackend) elastic = v == "c10d";
  }
  std::string line =
      "launcher on " + t.host + ": " +
      (elastic ? "its node rank from torchrun's c10d rendezvous in the step's store (" + nodes +
                     " nodes; the launchers beyond them wait there as spares)"
               : "node rank " + std::to_string(t.rank) + " of " + nodes + " nodes");
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
    if (t.spare) {
      lines.push_back("task " + std::to_string(t.rank) + " on " + t.host +
                      ": spare: parked, no program runs until a node is lost; then this node "
                      "takes its place (its node rank, RANKs, LOCAL_RANKs and tiles)");
      continue;
    }
    std::string line = "task " + std::to_string(t.rank) + " on " + t.host + ":";
    for (const auto& [k, v] : t.env) line += " " + k + "=" + v;
    lines.push_back(std::move(line));
    if (t.workers) lines.push_back(launcher_line(t));
  }
  return lines;
}

}  // namespace dp
