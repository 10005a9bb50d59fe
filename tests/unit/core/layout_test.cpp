// The layout core's pieces one by one: per-task binding, refusals, parsing,
// masks. Whole recorded steps are data (tests/fixtures/layouts), replayed by
// layout_fixtures_test.cpp.
#include "dp/layout.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace {

using Env = std::map<std::string, std::string>;

dp::SiteConfig site(std::vector<std::string> words) {
  auto c = dp::parse_site_config(words);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return *c;
}

dp::Options opts(const char* world, const char* tiles = nullptr) {
  dp::Options o;
  EXPECT_TRUE(dp::apply_option(o, "dp-world", world).ok());
  if (tiles) {
    EXPECT_TRUE(dp::apply_option(o, "dp-tiles", tiles).ok());
  }
  return o;
}

dp::StepShape shape(std::vector<std::string> hosts, const char* tasks_per_node,
                    dp::Distribution dist = dp::Distribution::block) {
  auto counts = dp::parse_tasks_per_node(tasks_per_node);
  EXPECT_TRUE(counts.ok());
  return {std::move(hosts), dp::assign_task_ids(*counts, dist)};
}

// srun's view: each node's configured gres ("" for none read).
dp::Result<dp::LayoutPlan> plan(const dp::Options& o, const dp::SiteConfig& s,
                                const dp::StepShape& sh, std::vector<std::string> gres = {},
                                std::optional<dp::DeviceRequest> request = std::nullopt) {
  dp::StepFacts f;
  f.shape = sh;
  f.options = o;
  f.site = s;
  f.request = request;
  for (auto& g : gres) f.nodes.push_back({g.empty() ? std::nullopt : std::optional(g), {}});
  return dp::plan_layout(f);
}

// slurmstepd's view: the one node's devices as Slurm listed them.
dp::StepFacts node_facts(dp::StepShape sh, dp::Options o, const char* visible,
                         std::optional<dp::DeviceRequest> request = std::nullopt) {
  dp::StepFacts f;
  f.shape = std::move(sh);
  f.options = std::move(o);
  f.site = site({});
  f.request = std::move(request);
  f.nodes.push_back({std::nullopt, dp::VisibleDevices{visible, {}}});
  return f;
}

dp::LayoutPlan fixed_plan(int world, int tiles, bool bound_per_task = false) {
  dp::LayoutPlan p;
  p.world_size = world;
  p.tiles_per_task = tiles;
  p.bound_per_task = bound_per_task;
  return p;
}

// A task's variables as a map; empty (and a failure) when refused.
Env env_of(const dp::LayoutPlan& p, const dp::SiteConfig& s, const dp::TaskPlace& place,
           const dp::NodeTiles& tiles) {
  auto env = dp::task_environment(p, s, place, tiles);
  EXPECT_TRUE(env.ok()) << env.error().message;
  return env.ok() ? Env(env->begin(), env->end()) : Env();
}

TEST(Layout, CudaAlreadyBoundPerTaskIsKept) {
  auto s = site({"kind=cuda"});
  const auto p = fixed_plan(4, 1);
  auto t = dp::node_tiles(s, {"3", {}});
  ASSERT_TRUE(t.ok());
  t->per_task = true;
  Env e = env_of(p, s, {3, 1, 2, 1}, *t);
  EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "3");
  EXPECT_EQ(e["DP_TILES"], "1");
}

// Slurm 26.05's gres.conf Flags=env_uuid: a node's devices are UUIDs, and a
// task's --dp-tiles mask is made of them, in Slurm's order.
TEST(Layout, CudaUuidsFromSlurmMakeTheMasks) {
  auto s = site({"kind=cuda"});
  auto t = dp::node_tiles(s, {"GPU-aa,GPU-bb,GPU-cc,GPU-dd", {}});
  ASSERT_TRUE(t.ok());
  Env e = env_of(fixed_plan(4, 2), s, {1, 1, 2, 0}, *t);
  EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "GPU-cc,GPU-dd");
  EXPECT_EQ(e["DP_TILES"], "2,3");
}

TEST(Layout, DevicesNamedByPositionOnlyWhenSlurmCountsFromZero) {
  auto cuda = site({"kind=cuda"});
  EXPECT_TRUE(dp::devices_named_by_position(cuda, {}));
  EXPECT_TRUE(dp::devices_named_by_position(cuda, {"0,1,2,3", {}}));
  EXPECT_TRUE(dp::devices_named_by_position(cuda, {"NoDevFiles", {}}));
  EXPECT_FALSE(dp::devices_named_by_position(cuda, {"GPU-aa,GPU-bb", {}}));
  EXPECT_FALSE(dp::devices_named_by_position(cuda, {"2,3", {}}));
  EXPECT_FALSE(dp::devices_named_by_position(cuda, {"0,2", {}}));
  auto ze = site({"kind=ze"});
  EXPECT_TRUE(dp::devices_named_by_position(ze, {"GPU-aa", "0,1"}));  // ze reads ZE_AFFINITY_MASK
  EXPECT_FALSE(dp::devices_named_by_position(ze, {{}, "1"}));
}

TEST(Layout, OneStepWideGpuIsNeverSharedByTwoTasks) {
  // srun --gpus=4 -N2 --ntasks-per-node=2: Slurm put 3 GPUs on n1, 1 on n2.
  auto s = site({"kind=cuda"});
  const auto p = fixed_plan(4, 1);
  auto t = dp::node_tiles(s, {"0", {}});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(dp::task_environment(p, s, {2, 0, 2, 1}, *t).ok());
  auto second = dp::task_environment(p, s, {3, 1, 2, 1}, *t);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("only 1"), std::string::npos) << second.error().message;
}

TEST(Layout, PerTaskBindingSmallerThanTilesIsRefused) {
  auto s = site({"kind=cuda"});
  dp::NodeTiles t{{"2"}, true};
  auto env = dp::task_environment(fixed_plan(2, 2), s, {1, 1, 2, 0}, t);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message.find("--gpus-per-task=2"), std::string::npos)
      << env.error().message;
}

TEST(Layout, CudaTooFewVisibleOnNodeIsRefusedAtTask) {
  auto s = site({"kind=cuda"});
  const auto p = fixed_plan(3, 1);
  auto t = dp::node_tiles(s, {"0,1", {}});
  ASSERT_TRUE(t.ok());
  auto env = dp::task_environment(p, s, {2, 2, 3, 0}, *t);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message.find("--dp-tiles=1"), std::string::npos);
}

TEST(Layout, RepeatedCountsExpand) {
  auto c = dp::parse_tasks_per_node("2(x3),1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<int>{2, 2, 2, 1}));
  // The step itself is replayed from tests/fixtures/layouts/repeated_counts_2x3_1.txt.
}

TEST(Layout, BadTasksPerNodeText) {
  EXPECT_FALSE(dp::parse_tasks_per_node("").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("2(x)").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("2(y3)").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("a,1").ok());
}

TEST(Layout, MasterIsTheHostOfTaskZero) {
  dp::StepShape sh{{"n1", "n2"}, {{1, 2}, {0, 3}}};  // arbitrary distribution
  EXPECT_EQ(sh.host_of(0), 1);
  EXPECT_EQ(sh.host_of(3), 1);
  EXPECT_EQ(sh.host_of(9), -1);
}

TEST(Plan, WorldMismatchIsRefusedWithFix) {
  auto sh = shape({"n1", "n2"}, "2(x2)");
  auto p = plan(opts("8"), site({}), sh);
  ASSERT_FALSE(p.ok());
  const auto& m = p.error().message;
  EXPECT_NE(m.find("--dp-world=8"), std::string::npos) << m;
  EXPECT_NE(m.find("4 tasks"), std::string::npos) << m;
  EXPECT_NE(m.find("--dp-world=auto"), std::string::npos) << m;
}

TEST(Plan, TooManyTilesIsRefusedNamingTheNode) {
  auto sh = shape({"n1", "n2"}, "3,1");
  auto p = plan(opts("auto", "2"), site({}), sh, {"gpu:4", "gpu:4"});
  ASSERT_FALSE(p.ok());
  const auto& m = p.error().message;
  EXPECT_NE(m.find("--dp-tiles=2"), std::string::npos) << m;
  EXPECT_NE(m.find("node n1"), std::string::npos) << m;
  EXPECT_NE(m.find("needing 6 tiles but has 4"), std::string::npos) << m;
  EXPECT_NE(m.find("--dp-tiles=1"), std::string::npos) << m;
}

TEST(Plan, TilesOnSiteWithoutAcceleratorsIsRefused) {
  auto p = plan(opts("auto", "1"), site({"kind=none"}), shape({"n1"}, "1"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("kind=none"), std::string::npos);
}

TEST(Plan, UnknownTileCountIsLeftToTheNode) {
  auto p = plan(opts("auto", "4"), site({}), shape({"n1"}, "8"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tiles_per_task, 4);
}

TEST(Plan, InconsistentShapeIsInternalError) {
  dp::StepShape sh{{"n1"}, {{0, 0}}};
  auto p = plan(opts("auto"), site({}), sh);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, dp::Errc::internal);
}

TEST(Plan, GresCapRefusesARequestTheStepCannotMeet) {
  // srun -N1 -n2 --dp-tiles=2 --gres=gpu:2 on nodes of 4 GPUs.
  auto p = plan(opts("auto", "2"), site({}), shape({"n1"}, "2"), {"gpu:4"},
                dp::parse_device_request("gres:gpu:2", "", "cpu:2", ""));
  ASSERT_FALSE(p.ok());
  const auto& m = p.error().message;
  EXPECT_NE(m.find("asks Slurm for 2 GPUs on node n1"), std::string::npos) << m;
  EXPECT_NE(m.find("need 4 tiles"), std::string::npos) << m;
  EXPECT_NE(m.find("--gpus-per-task=2"), std::string::npos) << m;
  // No GPU asked for at all.
  auto none = plan(opts("auto", "1"), site({}), shape({"n1"}, "2"), {"gpu:4"}, dp::DeviceRequest{});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("asks Slurm for 0 GPUs"), std::string::npos);
}

TEST(Plan, GresCapLimitsTheNodesTiles) {
  // --gpus-per-task=1 on nodes of 8: each node offers its 2 tasks 2 GPUs.
  auto req = dp::parse_device_request("", "gres:gpu:1", "", "gpu:per_task:1");
  EXPECT_EQ(req.per_task, 1);
  EXPECT_TRUE(req.bind_per_task);
  auto p = plan(opts("auto", "1"), site({}), shape({"n1", "n2"}, "2(x2)"), {"gpu:8", "gpu:8"}, req);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->nodes[0].tiles, 2);
  EXPECT_EQ(p->nodes[0].devices.entries, (std::vector<std::string>{"0", "1"}));
  EXPECT_TRUE(p->bound_per_task);
  // Stacks: a GPU of 2 stacks holds 2 tiles, so --dp-tiles=3 needs 2 GPUs per task.
  auto ze = plan(opts("auto", "3"), site({"kind=ze", "tiles_per_device=2"}), shape({"p1"}, "1"),
                 {"gpu:4"}, req);
  ASSERT_FALSE(ze.ok());
  EXPECT_NE(ze.error().message.find("--gpus-per-task=2"), std::string::npos);
}

TEST(Plan, SpreadOrDevicesSlurmGaveAreNotCapped) {
  // --gpus=4 over two nodes: the split is Slurm's, known only on the nodes.
  auto spread = dp::parse_device_request("", "", "gres:gpu:4", "");
  EXPECT_TRUE(
      plan(opts("auto", "1"), site({}), shape({"n1", "n2"}, "2(x2)"), {"gpu:4", "gpu:4"}, spread)
          .ok());
  // On the node, Slurm's own list is the step's devices: no request caps it.
  auto f = node_facts(shape({"n1"}, "2"), opts("auto", "1"), "0,1", dp::DeviceRequest{});
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->nodes[0].tiles, 2);
}

TEST(Plan, OneNodeOfALargerStep) {
  // slurmstepd on the second node of 4 tasks: its own tasks only.
  auto f = node_facts(dp::StepShape{{"n2"}, {{2, 3}}}, opts("4", "1"), "0,1");
  f.task_count = 4;
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  f.shape.task_ids = {{2, 4}};  // beyond the step's tasks
  EXPECT_EQ(dp::plan_layout(f).error().code, dp::Errc::internal);
}

TEST(Plan, PerTaskBindingTakesTheTasksOwnDevices) {
  // --gpus-per-task=2: Slurm gave local task 1 devices 6,7 of the node's 4..7.
  auto f = node_facts(dp::StepShape{{"n1"}, {{0, 1}}}, opts("auto", "2"), "4,5,6,7",
                      dp::parse_device_request("", "gres:gpu:2", "", "gpu:per_task:2"));
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto t = dp::task_tiles(*p, f.site, 0, {"6,7", {}});
  ASSERT_TRUE(t.ok());
  Env e = env_of(*p, f.site, {1, 1, 2, 0}, *t);
  EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "6,7");
  EXPECT_EQ(e["DP_TILES"], "2,3");
  // Without per-task binding the node's list is indexed, whatever the task
  // saw: its share 6,7, cuda:LOCAL_RANK its first (issue 58).
  p->bound_per_task = false;
  auto node = dp::task_tiles(*p, f.site, 0, {"6,7", {}});
  ASSERT_TRUE(node.ok());
  Env n = env_of(*p, f.site, {1, 1, 2, 0}, *node);
  EXPECT_EQ(n["CUDA_VISIBLE_DEVICES"], "4,6,5,7");
  EXPECT_EQ(n["DP_TILES"], "1,3");
}

// Issue 58: cuda:LOCAL_RANK is each task's own GPU. Slurm bound 6,7 to local
// task 1 of the node's 4..7 (--gpus-per-task=2): its mask lists the node's
// tasks' GPUs, its first own at index 1, and DP_TILES its CUDA ordinals there.
TEST(Plan, BoundTasksSeeTheNodesGpusWithTheirOwnAtLocalRank) {
  auto f = node_facts(dp::StepShape{{"n1"}, {{0, 1}}}, opts("auto", "2"), "4,5,6,7",
                      dp::parse_device_request("", "gres:gpu:2", "", "gpu:per_task:2"));
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->mask_by_local_rank);
  EXPECT_EQ(p->device_hint, "");
  for (auto [local, own, tiles] : {std::tuple{0, "4,5", "0,2"}, std::tuple{1, "6,7", "1,3"}}) {
    auto t = dp::task_tiles(*p, f.site, 0, {own, {}}, local);
    ASSERT_TRUE(t.ok());
    Env e = env_of(*p, f.site, {local, local, 2, 0}, *t);
    EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "4,6,5,7") << local;
    EXPECT_EQ(e["DP_TILES"], tiles) << local;
  }
  // Devices Slurm bound out of local-rank order: the task's own, as Slurm set them.
  auto odd = dp::task_tiles(*p, f.site, 0, {"4,5", {}}, 1);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(env_of(*p, f.site, {1, 1, 2, 0}, *odd)["CUDA_VISIBLE_DEVICES"], "4,5");
}

TEST(Plan, GpusPerTaskWithoutTilesMakeTheMaskToo) {
  // --gpus-per-task=1, no --dp-tiles (the README's first example).
  auto f = node_facts(dp::StepShape{{"n1"}, {{0, 1, 2}}}, opts("auto"), "1,2,3",
                      dp::parse_device_request("", "gres:gpu:1", "", "gpu:per_task:1"));
  EXPECT_EQ(f.request->bind_count, 1);
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->bound_tiles, 1);
  auto t = dp::task_tiles(*p, f.site, 0, {"3", {}}, 2);
  ASSERT_TRUE(t.ok());
  Env e = env_of(*p, f.site, {2, 2, 3, 0}, *t);
  EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "1,2,3");
  EXPECT_EQ(e.count("DP_TILES"), 0u) << "no --dp-tiles, no DP_TILES";
  // No binding and no --dp-tiles: Slurm's mask is left alone.
  f.request = dp::parse_device_request("gres:gpu:3", "", "", "");
  auto plain = dp::plan_layout(f);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(
      env_of(*plain, f.site, {2, 2, 3, 0}, *dp::task_tiles(*plain, f.site, 0, {"1,2,3", {}}, 2))
          .count("CUDA_VISIBLE_DEVICES"),
      0u);
}

TEST(Plan, ConfinedTasksKeepTheirOwnGpuAndGetTheHint) {
  auto f = node_facts(dp::StepShape{{"n1"}, {{0, 1}}}, opts("auto", "1"), "0,1",
                      dp::parse_device_request("", "gres:gpu:1", "", "gpu:per_task:1"));
  f.devices_confined = true;
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(p->mask_by_local_rank);
  EXPECT_NE(p->device_hint.find("Ask --gpus-per-node=N instead of --gpus-per-task"),
            std::string::npos)
      << p->device_hint;
  EXPECT_NE(p->device_hint.find("local ranks 1 and up"), std::string::npos) << p->device_hint;
  auto t = dp::task_tiles(*p, f.site, 0, {"1", {}}, 1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(env_of(*p, f.site, {1, 1, 2, 0}, *t)["CUDA_VISIBLE_DEVICES"], "1");
  // One task on the node: cuda:0 is its own, no hint.
  f.shape = dp::StepShape{{"n1"}, {{0}}};
  auto one = dp::plan_layout(f);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->device_hint, "");
  // Intel GPUs (kind=ze) keep each task's own stacks.
  f.shape = dp::StepShape{{"n1"}, {{0, 1}}};
  f.site = site({"kind=ze"});
  f.devices_confined = false;
  f.nodes = {{std::nullopt, dp::VisibleDevices{{}, "0.0,1.0"}}};
  auto ze = dp::plan_layout(f);
  ASSERT_TRUE(ze.ok()) << ze.error().message;
  EXPECT_FALSE(ze->mask_by_local_rank);
}

TEST(Facts, SlurmConfinesDevicesWithTaskCgroupAndConstrainDevices) {
  EXPECT_TRUE(dp::slurm_confines_devices("task/affinity,task/cgroup", "ConstrainDevices=yes\n"));
  EXPECT_TRUE(dp::slurm_confines_devices("cgroup", " constraindevices = YES # per task\n"));
  EXPECT_FALSE(dp::slurm_confines_devices("task/none", "ConstrainDevices=yes\n"));
  EXPECT_FALSE(dp::slurm_confines_devices("task/cgroup", "ConstrainCores=yes\n"));
  EXPECT_FALSE(dp::slurm_confines_devices("task/cgroup", "#ConstrainDevices=yes\n"));
  EXPECT_FALSE(
      dp::slurm_confines_devices("task/cgroup", "ConstrainDevices=yes\nConstrainDevices=no"));
  EXPECT_FALSE(dp::slurm_confines_devices("task/cgroup", ""));
}

TEST(Request, ReadsSlurmsStrings) {
  auto r = dp::parse_device_request("gres:gpu:a100:4", "", "cpu:8", "gpu:closest");
  EXPECT_EQ(r.per_node, 4);
  EXPECT_EQ(r.per_task, 0);
  EXPECT_FALSE(r.bind_per_task);
  EXPECT_TRUE(dp::parse_device_request("", "", "", "gres/gpu:verbose,per_task:1").bind_per_task);
  EXPECT_FALSE(dp::parse_device_request("", "", "", "gres/nic:per_task:1").bind_per_task);
  EXPECT_EQ(dp::parse_device_request("gres/gpu:2,gres/nic:1", "", "", "").per_node, 2);
  // Slurm 24.11's forms (scontrol show step: TresPerNode, TresPerTask, TresPerStep).
  EXPECT_EQ(dp::parse_device_request("gres/gpu:1", "", "cpu:2", "").per_node, 1);  // --gres=gpu:1
  EXPECT_EQ(dp::parse_device_request("gres/gpu:2,gres/gpu:2", "", "", "").per_node,
            2);  // --gpus-per-node=2
  EXPECT_EQ(dp::parse_device_request("", "gres/gpu=2", "cpu:2", "").per_task,
            2);  // --gpus-per-task
  EXPECT_EQ(dp::parse_device_request("", "cpu=2,gres/gpu=1,cpu:2", "", "").per_task, 1);
  EXPECT_EQ(dp::parse_device_request("", "gres/gpu:a100=1", "", "").per_task, 1);   // typed
  EXPECT_EQ(dp::parse_device_request("", "", "cpu:2,gres/gpu:2", "").per_step, 2);  // --gpus=2
}

TEST(Gres, CountsTheNamedDevices) {
  EXPECT_EQ(dp::gres_count("gpu:4", "gpu"), 4);
  EXPECT_EQ(dp::gres_count("gpu:tesla:2(S:0-1),gpu:a100:2(S:1),mps:100", "gpu"), 4);
  EXPECT_EQ(dp::gres_count("mps:100", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("(null)", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("gpu", "gpu"), 0);
}

TEST(Gres, ACountIsBoundedHoweverManyItems) {
  std::string many;
  for (int i = 0; i < 5000; ++i) many += (i ? "," : "") + std::string("gpu:1048576");
  EXPECT_EQ(dp::gres_count(many, "gpu"), 1 << 20);
}

TEST(Bitmask, Widths) {
  EXPECT_EQ(dp::tile_bitmask({}), "0x0");
  EXPECT_EQ(dp::tile_bitmask({0}), "0x1");
  EXPECT_EQ(dp::tile_bitmask({4, 5}), "0x30");
  EXPECT_EQ(dp::tile_bitmask({64}), "0x10000000000000000");
}

TEST(Explain, OneLinePerTaskInRankOrder) {
  auto s = site({});
  auto sh = shape({"n1", "n2"}, "1(x2)");
  auto p = plan(opts("auto"), s, sh);
  ASSERT_TRUE(p.ok());
  auto tasks = dp::step_environment(*p, s, sh, "10.0.0.1", "29500");
  ASSERT_TRUE(tasks.ok());
  auto lines = dp::explain_lines(*tasks);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("task 1 on n2: RANK=1", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("MASTER_ADDR=10.0.0.1"), std::string::npos);
}

dp::Options spare_opts(const char* spares, const char* max_restarts = nullptr) {
  dp::Options o = opts("auto");
  if (spares) {
    EXPECT_TRUE(dp::apply_option(o, "dp-spares", spares).ok());
  }
  if (max_restarts) {
    EXPECT_TRUE(dp::apply_option(o, "dp-max-restarts", max_restarts).ok());
  }
  return o;
}

TEST(Spares, TheWorldCountsTheNodesThatAreNoSpares) {
  auto p = plan(spare_opts("1"), site({}), shape({"n1", "n2", "n3"}, "2(x3)"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  EXPECT_EQ(p->spares, 1);
  EXPECT_EQ(p->tasks_per_node, 2);
  EXPECT_EQ(p->active_nodes(), 2);
  EXPECT_TRUE(p->restarts);
  EXPECT_EQ(p->max_restarts, 3);  // the site's max_restarts
  // A restarting step meets at the step's store, whatever the site's default.
  EXPECT_EQ(p->store, dp::StoreKind::step);
  EXPECT_EQ(plan(spare_opts("1", "5"), site({}), shape({"n1", "n2"}, "1(x2)"))->max_restarts, 5);
}

TEST(Spares, ASlurmstepdOfOneNodeSeesTheSameWorld) {
  dp::StepFacts f;
  f.shape = dp::StepShape{{"n3"}, {{4, 5}}};
  f.task_count = 6;
  f.node_count = 3;
  f.options = spare_opts("1");
  f.site = site({});
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  EXPECT_EQ(p->active_nodes(), 2);
}

TEST(Spares, RefusedWhereNoRankWouldBeLeftOrTheSiteKeepsNone) {
  auto all = plan(spare_opts("2"), site({}), shape({"n1", "n2"}, "1(x2)"));
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.error().message.find("-N 3 or more"), std::string::npos) << all.error().message;
  auto none = plan(spare_opts("1"), site({"max_spares=0"}), shape({"n1", "n2"}, "1(x2)"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("max_spares=0"), std::string::npos);
  auto many = plan(spare_opts("3"), site({"max_spares=2"}), shape({"a", "b", "c", "d"}, "1(x4)"));
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("at most 2 spare nodes"), std::string::npos);
  auto uneven = plan(spare_opts("1"), site({}), shape({"n1", "n2", "n3"}, "2,1,1"));
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.error().message.find("--ntasks-per-node"), std::string::npos);
  dp::Options rank0 = spare_opts("1");
  EXPECT_TRUE(dp::apply_option(rank0, "dp-store", "rank0").ok());
  auto store = plan(rank0, site({}), shape({"n1", "n2"}, "1(x2)"));
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.error().message.find("--dp-store=rank0"), std::string::npos);
}

TEST(Spares, RestartsInPlaceNeedNoSpare) {
  auto p = plan(spare_opts(nullptr, "2"), site({}), shape({"n1", "n2"}, "2(x2)"));
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->world_size, 4);
  EXPECT_EQ(p->spares, 0);
  EXPECT_TRUE(p->restarts);
  EXPECT_EQ(p->max_restarts, 2);
}

TEST(Spares, ExplainShowsTheSparesParked) {
  auto s = site({});
  auto sh = shape({"n1", "n2", "n3"}, "2(x3)");
  auto p = plan(spare_opts("1"), s, sh);
  ASSERT_TRUE(p.ok());
  auto tasks = dp::step_environment(*p, s, sh, "10.0.0.1", "29500");
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  auto lines = dp::explain_lines(*tasks);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[3].rfind("task 3 on n2: RANK=3 LOCAL_RANK=1 WORLD_SIZE=4", 0), 0u) << lines[3];
  EXPECT_EQ(lines[4].rfind("task 4 on n3: spare: parked", 0), 0u) << lines[4];
  EXPECT_EQ(lines[5].rfind("task 5 on n3: spare: parked", 0), 0u) << lines[5];
}

}  // namespace
