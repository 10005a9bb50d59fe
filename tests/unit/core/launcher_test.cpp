// Per-node launchers: recognising them from a command, the step's shape,
// each worker's devices, and what a launcher task gets from the one layout
// entry (srun's and slurmstepd's view).
#include "dp/launcher.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "dp/layout.hpp"

namespace {

using Words = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

TEST(LauncherInCommand, RecognisesTorchrunAndItsKin) {
  EXPECT_EQ(dp::launcher_in_command({"torchrun", "--nproc-per-node=2", "ddp.py"}), "torchrun");
  EXPECT_EQ(dp::launcher_in_command({"/usr/bin/torchrun", "ddp.py"}), "torchrun");
  EXPECT_EQ(dp::launcher_in_command({"ft_launcher", "t.py"}), "ft_launcher");
  EXPECT_EQ(dp::launcher_in_command({"python3", "-m", "torch.distributed.run", "t.py"}),
            "torch.distributed.run");
  EXPECT_EQ(dp::launcher_in_command({"/usr/bin/python3.11", "-u", "-m", "torch.distributed.launch",
                                     "--use-env", "t.py"}),
            "torch.distributed.launch");
  EXPECT_EQ(dp::launcher_in_command({"python", "-mtorch.distributed.run", "t.py"}),
            "torch.distributed.run");
  EXPECT_EQ(dp::launcher_in_command({"env", "OMP_NUM_THREADS=1", "torchrun", "t.py"}), "torchrun");
}

TEST(LauncherInCommand, LooksIntoAShellScript) {
  EXPECT_EQ(dp::launcher_in_command({"bash", "-c", "cd /x && exec torchrun t.py"}), "torchrun");
  EXPECT_EQ(dp::launcher_in_command(
                {"/bin/sh", "-c", "A=1 python3 -m torch.distributed.launch --use-env t.py"}),
            "torch.distributed.launch");
  EXPECT_EQ(dp::launcher_in_command({"bash", "-c", "echo torchrun; python3 t.py"}), "");
}

TEST(LauncherInCommand, PlainProgramsAreNotLaunchers) {
  EXPECT_EQ(dp::launcher_in_command({}), "");
  EXPECT_EQ(dp::launcher_in_command({"python3", "train.py", "-m", "torch.distributed.run"}), "");
  EXPECT_EQ(dp::launcher_in_command({"python3", "-c", "import torch.distributed.run"}), "");
  EXPECT_EQ(dp::launcher_in_command({"python3", "-m", "torch.distributed.elastic"}), "");
  EXPECT_EQ(dp::launcher_in_command({"./torchrun.sh"}), "");
  EXPECT_EQ(dp::launcher_in_command({"bash", "run.sh", "torchrun"}), "");
}

dp::Options with_launcher(const char* mode) {
  dp::Options o;
  if (mode) {
    EXPECT_TRUE(dp::apply_option(o, "dp-launcher", mode).ok());
  }
  return o;
}

TEST(LaunchShape, OneTaskPerNodeGetsThePerNodeVariables) {
  auto s = dp::launch_shape(with_launcher(nullptr), {"python3", "t.py"}, 2, 2);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->per_node);
  EXPECT_EQ(s->launcher, "");
  auto many = dp::launch_shape(with_launcher(nullptr), {"python3", "t.py"}, 2, 4);
  ASSERT_TRUE(many.ok());
  EXPECT_FALSE(many->per_node);
}

TEST(LaunchShape, ALauncherWithSeveralTasksOnANodeIsRefusedWithTheFix) {
  auto s = dp::launch_shape(with_launcher(nullptr), {"torchrun", "t.py"}, 2, 4);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("torchrun"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("--ntasks-per-node=1"), std::string::npos);
  auto marked = dp::launch_shape(with_launcher("torchrun"), {"./wrapper.sh"}, 1, 2);
  EXPECT_FALSE(marked.ok());
}

TEST(LaunchShape, MarkedOrSwitchedOff) {
  auto marked = dp::launch_shape(with_launcher("torchrun"), {"./wrapper.sh"}, 3, 3);
  ASSERT_TRUE(marked.ok());
  EXPECT_EQ(marked->launcher, "torchrun");
  auto off = dp::launch_shape(with_launcher("none"), {"torchrun", "t.py"}, 2, 4);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->per_node);
  EXPECT_EQ(off->launcher, "");
  dp::Options bad;
  EXPECT_FALSE(dp::apply_option(bad, "dp-launcher", "mpirun").ok());
}

TEST(LaunchShape, StandaloneOnSeveralNodesIsRefusedWithTheFix) {
  auto s = dp::launch_shape(with_launcher(nullptr), {"torchrun", "--standalone", "t.py"}, 2, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("drop --standalone"), std::string::npos) << s.error().message;
  auto shell = dp::launch_shape(with_launcher(nullptr),
                                {"bash", "-c", "cd x && torchrun --standalone t.py"}, 2, 2);
  EXPECT_FALSE(shell.ok()) << "inside sh -c too";
  EXPECT_TRUE(
      dp::launch_shape(with_launcher(nullptr), {"torchrun", "--standalone", "t.py"}, 1, 1).ok())
      << "one node: standalone is that node's world";
  EXPECT_TRUE(
      dp::launch_shape(with_launcher(nullptr), {"torchrun", "t.py", "--standalone"}, 2, 2).ok())
      << "a flag of the script, not of torchrun";
}

// A launcher step's refusal of --dp-master-socket=WHAT, which a plain rank takes.
std::string master_socket_refusal(const char* what) {
  dp::Options o = with_launcher(nullptr);
  EXPECT_TRUE(dp::apply_option(o, "dp-master-socket", what).ok());
  EXPECT_TRUE(dp::launch_shape(o, {"python3", "t.py"}, 2, 2).ok()) << "a plain rank takes it";
  auto s = dp::launch_shape(o, {"torchrun", "t.py"}, 2, 2);
  EXPECT_FALSE(s.ok()) << "a launcher took --dp-master-socket=" << what;
  return s.ok() ? std::string() : s.error().message;
}

TEST(LaunchShape, ALauncherCannotTakeThePassedMasterSocket) {
  const std::string why = master_socket_refusal("pass");
  EXPECT_NE(why.find("--dp-master-socket=pass"), std::string::npos) << why;
}

// torchrun's TCPStore binds MASTER_PORT without SO_REUSEPORT: a shared hold
// would keep it out.
TEST(LaunchShape, ALauncherCannotShareTheHeldPorts) {
  const std::string why = master_socket_refusal("share");
  EXPECT_NE(why.find("--dp-master-socket=share"), std::string::npos) << why;
  EXPECT_NE(why.find("SO_REUSEPORT"), std::string::npos) << why;
}

TEST(PlanWorkers, OneDevicePerWorkerLeavesTheMaskAlone) {
  auto w = dp::plan_workers({"3", "5"}, 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->count, 2);
  EXPECT_TRUE(w->mask.empty());
  EXPECT_EQ(w->devices, (std::vector<Words>{{"3"}, {"5"}}));
}

TEST(PlanWorkers, TilesPerWorkerPutEachWorkersFirstTileAtItsLocalRank) {
  auto w = dp::plan_workers({"0", "1", "2", "3", "4"}, 2);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->count, 2);
  EXPECT_EQ(w->mask, (Words{"0", "2", "1", "3"}));
  EXPECT_EQ(w->indices, (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(w->devices, (std::vector<Words>{{"0", "1"}, {"2", "3"}}));
  EXPECT_FALSE(dp::plan_workers({"0"}, 2).ok());
}

// cuda:LOCAL_RANK within the mask is the worker's own device, and no device
// serves two workers, for every node size and tiles per worker.
TEST(PlanWorkers, NoTwoWorkersShareADevice) {
  for (int have = 1; have <= 9; ++have)
    for (int k = 0; k <= have; ++k) {
      Words tiles;
      for (int i = 0; i < have; ++i) tiles.push_back("d" + std::to_string(i));
      auto w = dp::plan_workers(tiles, k);
      ASSERT_TRUE(w.ok());
      std::set<std::string> used;
      const Words& mask = k == 0 ? tiles : w->mask;
      for (int l = 0; l < w->count; ++l) {
        const auto& mine = w->devices[static_cast<size_t>(l)];
        EXPECT_EQ(mask[static_cast<size_t>(l)], mine.front()) << have << " " << k;
        EXPECT_EQ(mine.size(), static_cast<size_t>(k == 0 ? 1 : k));
        for (const auto& d : mine) EXPECT_TRUE(used.insert(d).second) << d << " used twice";
      }
      EXPECT_EQ(w->count, k == 0 ? have : have / k);
    }
}

dp::SiteConfig cuda_site() {
  auto c = dp::parse_site_config({"kind=cuda"});
  EXPECT_TRUE(c.ok());
  return *c;
}

Env as_map(const dp::EnvList& env) { return Env(env.begin(), env.end()); }

// srun's view of 2 nodes with 4 GPUs each, one task per node.
dp::StepFacts two_nodes(Words command, const char* tiles) {
  dp::StepFacts f;
  f.shape = {{"n1", "n2"}, {{0}, {1}}};
  f.nodes = {{std::string("gpu:4"), {}}, {std::string("gpu:4"), {}}};
  EXPECT_TRUE(dp::apply_option(f.options, "dp-world", "auto").ok());
  if (tiles) {
    EXPECT_TRUE(dp::apply_option(f.options, "dp-tiles", tiles).ok());
  }
  f.site = cuda_site();
  f.command = std::move(command);
  return f;
}

TEST(LauncherLayout, ALauncherGetsTorchrunsSettingsAndEveryWorkersTiles) {
  auto plan = dp::plan_layout(two_nodes({"torchrun", "t.py"}, "2"));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto tasks =
      dp::step_environment(*plan, cuda_site(), {{"n1", "n2"}, {{0}, {1}}}, "10.0.0.1", "29600");
  ASSERT_TRUE(tasks.ok()) << tasks.error().message;
  ASSERT_EQ(tasks->size(), 2u);
  Env second = as_map((*tasks)[1].env);
  EXPECT_EQ(second["PET_NNODES"], "2");
  EXPECT_EQ(second["PET_NODE_RANK"], "1");
  EXPECT_EQ(second["PET_NPROC_PER_NODE"], "2");
  EXPECT_EQ(second["PET_RDZV_BACKEND"], "static");
  EXPECT_EQ(second["PET_MASTER_ADDR"], "10.0.0.1");
  EXPECT_EQ(second["PET_MASTER_PORT"], "29600");
  EXPECT_EQ(second["CUDA_VISIBLE_DEVICES"], "0,2,1,3");
  EXPECT_EQ(second["DP_TILES"], "0,2,1,3");
  const auto lines = dp::explain_lines(*tasks);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3],
            "launcher on n2: node rank 1 of 2 nodes, 2 worker(s); worker 0: 0,1; "
            "worker 1: 2,3");
}

// --dp-spares: the launchers meet in torchrun's c10d rendezvous in the
// step's store, through their node agent; none hosts it.
TEST(LauncherLayout, ALaunchersStepWithSparesMeetsInTheStepsStore) {
  dp::LaunchShape shape;
  shape.per_node = true;
  shape.launcher = "torchrun";
  shape.nodes = 2;
  shape.spares = 1;
  Env env;
  for (auto& [k, v] : dp::launcher_master_environment(shape, "10.0.0.1", "29600")) env[k] = v;
  EXPECT_EQ(env["PET_RDZV_ENDPOINT"], "127.0.0.1:29600");
  EXPECT_EQ(env["PET_RDZV_ID"], "slurm-dp");
  // torchrun's own keep-alive: the daemon ages a lost launcher at once.
  EXPECT_EQ(env["PET_RDZV_CONF"], "is_host=false,join_timeout=86400");
  EXPECT_EQ(env["PET_MONITOR_INTERVAL"], "0.1");
  EXPECT_EQ(env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"], "1");
  EXPECT_EQ(env.count("PET_MASTER_ADDR"), 0u);
}

TEST(LauncherLayout, WithoutTilesTheNodesDevicesDecideTheWorkers) {
  dp::StepFacts f = two_nodes({"python3", "-m", "torch.distributed.run", "t.py"}, nullptr);
  // slurmstepd's view: its own node, the devices Slurm gave the step there.
  f.shape = {{"n2"}, {{1}}};
  f.task_count = 2;
  f.node_count = 2;
  f.nodes = {{std::nullopt, dp::VisibleDevices{std::string("1,3"), std::nullopt}}};
  auto plan = dp::plan_layout(f);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto tiles = dp::task_tiles(*plan, f.site, 0, {});
  ASSERT_TRUE(tiles.ok());
  auto env = dp::task_environment(*plan, f.site, {1, 0, 1, 1}, *tiles);
  ASSERT_TRUE(env.ok()) << env.error().message;
  Env e = as_map(*env);
  EXPECT_EQ(e["PET_NPROC_PER_NODE"], "2");
  EXPECT_EQ(e["PET_NODE_RANK"], "1");
  EXPECT_EQ(e.count("CUDA_VISIBLE_DEVICES"), 0u) << "Slurm's own mask stays";
}

TEST(LauncherLayout, APlainTaskPerNodeKeepsItsTilesAndNamesThemForALauncher) {
  auto plan = dp::plan_layout(two_nodes({"python3", "t.py"}, "2"));
  ASSERT_TRUE(plan.ok());
  auto tasks = dp::step_environment(*plan, cuda_site(), {{"n1", "n2"}, {{0}, {1}}}, "n1", "1");
  ASSERT_TRUE(tasks.ok());
  Env first = as_map((*tasks)[0].env);
  EXPECT_EQ(first["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(first["PET_NPROC_PER_NODE"], "2");
  EXPECT_FALSE((*tasks)[0].workers.has_value());
}

// srun's view (--dp-explain): the node has 4 GPUs, the step asked for 2 per node.
TEST(LauncherLayout, WorkersFollowTheGpusTheStepAskedFor) {
  dp::StepFacts f = two_nodes({"torchrun", "t.py"}, nullptr);
  EXPECT_TRUE(dp::device_request_matters(f.options, f.site, f.command));
  // A task per rank too, on a CUDA site: GPUs Slurm binds per task make its mask.
  EXPECT_TRUE(dp::device_request_matters(f.options, f.site, {"python3", "t.py"}));
  EXPECT_FALSE(dp::device_request_matters(f.options, *dp::parse_site_config({"kind=none"}),
                                          {"python3", "t.py"}));
  f.request = dp::parse_device_request("gres:gpu:2", "", "", "");
  auto plan = dp::plan_layout(f);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto tasks = dp::step_environment(*plan, f.site, f.shape, "n1", "1");
  ASSERT_TRUE(tasks.ok());
  EXPECT_EQ(as_map((*tasks)[0].env)["PET_NPROC_PER_NODE"], "2");
  EXPECT_EQ(dp::explain_lines(*tasks)[1],
            "launcher on n1: node rank 0 of 2 nodes, 2 worker(s); worker 0: 0; worker 1: 1");
}

TEST(LauncherLayout, ALauncherWithTwoTasksPerNodeIsRefusedBeforeLaunch) {
  dp::StepFacts f = two_nodes({"torchrun", "t.py"}, nullptr);
  f.shape = {{"n1", "n2"}, {{0, 1}, {2, 3}}};
  auto plan = dp::plan_layout(f);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("--ntasks-per-node=1"), std::string::npos);
}

TEST(LauncherLayout, AWorldOfWorkersIsRefusedSayingWorldCountsLaunchers) {
  dp::StepFacts f = two_nodes({"torchrun", "t.py"}, nullptr);
  f.options.world = 4;  // 2 nodes x 2 workers: what a torchrun user may write
  auto plan = dp::plan_layout(f);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("counts the launchers"), std::string::npos)
      << plan.error().message;
  EXPECT_NE(plan.error().message.find("--dp-world=auto"), std::string::npos);
  f.options.world = 2;
  EXPECT_TRUE(dp::plan_layout(f).ok());
}

TEST(LauncherOptions, TravelToTheNodesInDpOptions) {
  dp::Options o = with_launcher("torchrun");
  const std::string text = dp::format_node_options(o);
  EXPECT_NE(text.find("--dp-launcher=torchrun"), std::string::npos) << text;
  auto back = dp::parse_node_options(text, "DP_OPTIONS");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->launcher, dp::Launcher::torchrun);
}

}  // namespace
