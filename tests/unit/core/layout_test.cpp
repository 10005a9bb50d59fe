// The layout core's pieces one by one: per-task binding, refusals, parsing,
// masks. Whole recorded steps are data (tests/fixtures/layouts), replayed by
// layout_fixtures_test.cpp.
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
  EXPECT_NE(env.error().message.find("--gpus-per-task=2"), std::string::npos)
      << env.error().message;
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
