// Replays recorded step environments through the layout core: host lists
// (already expanded), SLURM_STEP_TASKS_PER_NODE, distribution, gres-visible
// devices in; every task's variables out.
#include "dp/layout.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

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

// Every task's environment, keyed by rank, for a step whose nodes all see
// the same devices.
std::vector<Env> replay(const dp::SiteConfig& s, const dp::Options& o, const dp::StepShape& sh,
                        const dp::VisibleDevices& visible = {}) {
  std::vector<dp::NodeTiles> tiles;
  std::vector<int> counts;
  for (size_t i = 0; i < sh.hosts.size(); ++i) {
    auto t = dp::node_tiles(s, visible);
    EXPECT_TRUE(t.ok());
    tiles.push_back(*t);
    counts.push_back(static_cast<int>(t->entries.size()));
  }
  auto plan = dp::plan_step(o, s, sh, counts);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  if (!plan.ok()) return {};
  auto tasks = dp::step_environment(*plan, s, sh, tiles, sh.hosts[0], "29500");
  EXPECT_TRUE(tasks.ok()) << tasks.error().message;
  std::vector<Env> out;
  for (const auto& t : *tasks) {
    Env e(t.env.begin(), t.env.end());
    e["host"] = t.host;
    out.push_back(e);
  }
  return out;
}

TEST(Layout, Rdu32TasksOn2NodesOf64Tiles) {
  auto s = site({"kind=rdu", "devices_per_node=8", "tiles_per_device=8"});
  auto tasks = replay(s, opts("auto", "4"), shape({"sn-001", "sn-002"}, "16(x2)"));
  ASSERT_EQ(tasks.size(), 32u);
  EXPECT_EQ(tasks[0]["SF_RNT_TILE_AFFINITY"], "0xf");
  EXPECT_EQ(tasks[7]["SF_RNT_TILE_AFFINITY"], "0xf0000000");
  EXPECT_EQ(tasks[15]["SF_RNT_TILE_AFFINITY"], "0xf000000000000000");
  EXPECT_EQ(tasks[16]["SF_RNT_TILE_AFFINITY"], "0xf");
  EXPECT_EQ(tasks[16]["LOCAL_RANK"], "0");
  EXPECT_EQ(tasks[16]["NODE_RANK"], "1");
  EXPECT_EQ(tasks[16]["host"], "sn-002");
  EXPECT_EQ(tasks[31]["DP_TILES"], "60,61,62,63");
  EXPECT_EQ(tasks[31]["WORLD_SIZE"], "32");
  EXPECT_EQ(tasks[31]["LOCAL_WORLD_SIZE"], "16");
  for (const auto& t : tasks) EXPECT_EQ(t.at("MASTER_ADDR"), "sn-001");
}

TEST(Layout, RduIssueExamplesOn32TileNode) {
  auto s = site({"kind=rdu", "devices_per_node=4", "tiles_per_device=8"});
  auto four = replay(s, opts("auto", "4"), shape({"sn1"}, "8"));
  ASSERT_EQ(four.size(), 8u);
  EXPECT_EQ(four[7]["SF_RNT_TILE_AFFINITY"], "0xf0000000");
  auto eight = replay(s, opts("auto", "8"), shape({"sn1"}, "4"));
  ASSERT_EQ(eight.size(), 4u);
  EXPECT_EQ(eight[3]["SF_RNT_TILE_AFFINITY"], "0xff000000");
  EXPECT_EQ(eight[3]["DP_TILES"], "24,25,26,27,28,29,30,31");
}

TEST(Layout, ZeEightTasksOnTwoNodesOfFourGpusTwoStacks) {
  auto s = site({"kind=ze", "devices_per_node=4", "tiles_per_device=2"});
  auto tasks = replay(s, opts("8", "2"), shape({"pvc-01", "pvc-02"}, "4(x2)"));
  ASSERT_EQ(tasks.size(), 8u);
  EXPECT_EQ(tasks[0]["ZE_AFFINITY_MASK"], "0.0,0.1");
  EXPECT_EQ(tasks[1]["ZE_AFFINITY_MASK"], "1.0,1.1");
  EXPECT_EQ(tasks[7]["ZE_AFFINITY_MASK"], "3.0,3.1");
  EXPECT_EQ(tasks[7]["RANK"], "7");
  EXPECT_EQ(tasks[7]["LOCAL_RANK"], "3");
  // One stack per task: 8 tasks per node.
  auto stacks = replay(s, opts("auto", "1"), shape({"pvc-01", "pvc-02"}, "8(x2)"));
  ASSERT_EQ(stacks.size(), 16u);
  EXPECT_EQ(stacks[3]["ZE_AFFINITY_MASK"], "1.1");
  EXPECT_EQ(stacks[12]["ZE_AFFINITY_MASK"], "2.0");
}

TEST(Layout, ZeNarrowedBySlurm) {
  auto s = site({"kind=ze", "tiles_per_device=2"});
  auto tasks = replay(s, opts("auto", "1"), shape({"pvc-01"}, "4"), {std::nullopt, "2,3"});
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[0]["ZE_AFFINITY_MASK"], "2.0");
  EXPECT_EQ(tasks[3]["ZE_AFFINITY_MASK"], "3.1");
}

TEST(Layout, CudaNarrowedBySlurmUsesItsEntriesNeverAbsoluteIndices) {
  auto s = site({"kind=cuda"});
  // Slurm gave this step GPUs 2 and 3 of each node.
  auto tasks = replay(s, opts("auto", "1"), shape({"gpu1", "gpu2"}, "2(x2)"), {"2,3", {}});
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[0]["CUDA_VISIBLE_DEVICES"], "2");
  EXPECT_EQ(tasks[1]["CUDA_VISIBLE_DEVICES"], "3");
  EXPECT_EQ(tasks[2]["CUDA_VISIBLE_DEVICES"], "2");
  EXPECT_EQ(tasks[3]["CUDA_VISIBLE_DEVICES"], "3");
  EXPECT_EQ(tasks[1]["DP_TILES"], "1");
}

TEST(Layout, CudaAlreadyBoundPerTaskIsKept) {
  auto s = site({"kind=cuda"});
  dp::StepPlan plan{4, 1};
  auto t = dp::node_tiles(s, {"3", {}});
  ASSERT_TRUE(t.ok());
  t->per_task = true;
  auto env = dp::task_environment(plan, s, {3, 1, 2, 1}, *t);
  ASSERT_TRUE(env.ok()) << env.error().message;
  Env e(env->begin(), env->end());
  EXPECT_EQ(e["CUDA_VISIBLE_DEVICES"], "3");
  EXPECT_EQ(e["DP_TILES"], "1");
}

TEST(Layout, OneStepWideGpuIsNeverSharedByTwoTasks) {
  // srun --gpus=4 -N2 --ntasks-per-node=2: Slurm put 3 GPUs on n1, 1 on n2.
  auto s = site({"kind=cuda"});
  dp::StepPlan plan{4, 1};
  auto t = dp::node_tiles(s, {"0", {}});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(dp::task_environment(plan, s, {2, 0, 2, 1}, *t).ok());
  auto second = dp::task_environment(plan, s, {3, 1, 2, 1}, *t);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("only 1"), std::string::npos) << second.error().message;
}

TEST(Layout, PerTaskBindingSmallerThanTilesIsRefused) {
  auto s = site({"kind=cuda"});
  dp::NodeTiles t{{"2"}, true};
  auto env = dp::task_environment(dp::StepPlan{2, 2}, s, {1, 1, 2, 0}, t);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message.find("--gpus-per-task=2"), std::string::npos) << env.error().message;
}

TEST(Layout, CudaTooFewVisibleOnNodeIsRefusedAtTask) {
  auto s = site({"kind=cuda"});
  dp::StepPlan plan{3, 1};
  auto t = dp::node_tiles(s, {"0,1", {}});
  ASSERT_TRUE(t.ok());
  auto env = dp::task_environment(plan, s, {2, 2, 3, 0}, *t);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message.find("--dp-tiles=1"), std::string::npos);
}

TEST(Layout, NoTilesMeansNoMask) {
  auto tasks = replay(site({}), opts("auto"), shape({"n1", "n2"}, "2(x2)"), {"0,1", {}});
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[1].count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(tasks[1].count("DP_TILES"), 0u);
  EXPECT_EQ(tasks[3]["RANK"], "3");
  EXPECT_EQ(tasks[3]["GROUP_RANK"], "1");
}

TEST(Layout, UnevenBlock) {
  auto tasks = replay(site({}), opts("auto"), shape({"n1", "n2"}, "3,1"));
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[2]["host"], "n1");
  EXPECT_EQ(tasks[2]["LOCAL_WORLD_SIZE"], "3");
  EXPECT_EQ(tasks[3]["host"], "n2");
  EXPECT_EQ(tasks[3]["LOCAL_RANK"], "0");
  EXPECT_EQ(tasks[3]["LOCAL_WORLD_SIZE"], "1");
  EXPECT_EQ(tasks[3]["WORLD_SIZE"], "4");
}

TEST(Layout, RepeatedCountsExpand) {
  auto c = dp::parse_tasks_per_node("2(x3),1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<int>{2, 2, 2, 1}));
  auto tasks = replay(site({}), opts("7"), shape({"a", "b", "c", "d"}, "2(x3),1"));
  ASSERT_EQ(tasks.size(), 7u);
  EXPECT_EQ(tasks[6]["host"], "d");
  EXPECT_EQ(tasks[6]["NODE_RANK"], "3");
  EXPECT_EQ(tasks[5]["LOCAL_RANK"], "1");
}

TEST(Layout, BadTasksPerNodeText) {
  EXPECT_FALSE(dp::parse_tasks_per_node("").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("2(x)").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("2(y3)").ok());
  EXPECT_FALSE(dp::parse_tasks_per_node("a,1").ok());
}

TEST(Layout, CyclicDistribution) {
  auto tasks = replay(site({}), opts("auto"), shape({"n1", "n2"}, "3,1", dp::Distribution::cyclic));
  ASSERT_EQ(tasks.size(), 4u);
  EXPECT_EQ(tasks[0]["host"], "n1");
  EXPECT_EQ(tasks[1]["host"], "n2");
  EXPECT_EQ(tasks[2]["host"], "n1");
  EXPECT_EQ(tasks[2]["LOCAL_RANK"], "1");
  EXPECT_EQ(tasks[3]["host"], "n1");
  EXPECT_EQ(tasks[3]["LOCAL_RANK"], "2");
  EXPECT_EQ(tasks[1]["LOCAL_RANK"], "0");
}

TEST(Layout, MasterIsTheHostOfTaskZero) {
  dp::StepShape sh{{"n1", "n2"}, {{1, 2}, {0, 3}}};  // arbitrary distribution
  EXPECT_EQ(sh.host_of(0), 1);
  EXPECT_EQ(sh.host_of(3), 1);
  EXPECT_EQ(sh.host_of(9), -1);
}

TEST(Layout, SubsetStepCountsComeFromTheStep) {
  // srun -N1 -n2 inside a 2-node allocation: the shape is the step's.
  auto tasks = replay(site({}), opts("auto"), shape({"n2"}, "2"));
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[1]["WORLD_SIZE"], "2");
  EXPECT_EQ(tasks[1]["NODE_RANK"], "0");
}

TEST(Plan, WorldMismatchIsRefusedWithFix) {
  auto sh = shape({"n1", "n2"}, "2(x2)");
  auto p = dp::plan_step(opts("8"), site({}), sh, {-1, -1});
  ASSERT_FALSE(p.ok());
  const auto& m = p.error().message;
  EXPECT_NE(m.find("--dp-world=8"), std::string::npos) << m;
  EXPECT_NE(m.find("4 tasks"), std::string::npos) << m;
  EXPECT_NE(m.find("--dp-world=auto"), std::string::npos) << m;
}

TEST(Plan, TooManyTilesIsRefusedNamingTheNode) {
  auto sh = shape({"n1", "n2"}, "3,1");
  auto p = dp::plan_step(opts("auto", "2"), site({}), sh, {4, 4});
  ASSERT_FALSE(p.ok());
  const auto& m = p.error().message;
  EXPECT_NE(m.find("--dp-tiles=2"), std::string::npos) << m;
  EXPECT_NE(m.find("node n1"), std::string::npos) << m;
  EXPECT_NE(m.find("needing 6 tiles but has 4"), std::string::npos) << m;
  EXPECT_NE(m.find("--dp-tiles=1"), std::string::npos) << m;
}

TEST(Plan, TilesOnSiteWithoutAcceleratorsIsRefused) {
  auto p = dp::plan_step(opts("auto", "1"), site({"kind=none"}), shape({"n1"}, "1"), {-1});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("kind=none"), std::string::npos);
}

TEST(Plan, UnknownTileCountIsLeftToTheNode) {
  auto p = dp::plan_step(opts("auto", "4"), site({}), shape({"n1"}, "8"), {-1});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->tiles_per_task, 4);
}

TEST(Plan, InconsistentShapeIsInternalError) {
  dp::StepShape sh{{"n1"}, {{0, 0}}};
  auto p = dp::plan_step(opts("auto"), site({}), sh, {-1});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, dp::Errc::internal);
}

TEST(Gres, CountsTheNamedDevices) {
  EXPECT_EQ(dp::gres_count("gpu:4", "gpu"), 4);
  EXPECT_EQ(dp::gres_count("gpu:tesla:2(S:0-1),gpu:a100:2(S:1),mps:100", "gpu"), 4);
  EXPECT_EQ(dp::gres_count("mps:100", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("(null)", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("", "gpu"), 0);
  EXPECT_EQ(dp::gres_count("gpu", "gpu"), 0);
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
  auto plan = dp::plan_step(opts("auto"), s, sh, {-1, -1});
  ASSERT_TRUE(plan.ok());
  auto tasks = dp::step_environment(*plan, s, sh, {}, "10.0.0.1", "29500");
  ASSERT_TRUE(tasks.ok());
  auto lines = dp::explain_lines(*tasks);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].rfind("task 1 on n2: RANK=1", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("MASTER_ADDR=10.0.0.1"), std::string::npos);
}

}  // namespace
