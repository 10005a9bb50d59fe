// Context::from_environment and the backend choice, from plain environments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "backends.hpp"
#include "dp/context.hpp"
#include "dp/env_names.hpp"

namespace {

const char* const kAllVars[] = {
    "RANK",        "WORLD_SIZE",  "LOCAL_RANK",    "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
    "MASTER_ADDR", "MASTER_PORT", "DP_RDV_ADDR",   "DP_RDV_SECRET",    "DP_JOB_ID", "DP_STEP_ID",
    "DP_TILES",    "DP_BACKEND",  "DP_TIMEOUT_MS", "DP_STORE_DIR",     "DP_SHM",    "DP_OPTIONS"};

// Replaces the variables this test cares about, restores nothing: each test
// starts from a clean slate instead. Each word is NAME=VALUE, as in `env`.
void set_env(const std::vector<std::string_view>& words) {
  for (const char* v : kAllVars) unsetenv(v);
  for (std::string_view w : words) {
    const size_t eq = w.find('=');
    setenv(std::string(w.substr(0, eq)).c_str(), std::string(w.substr(eq + 1)).c_str(), 1);
  }
}

TEST(Context, NothingSetIsASingleProcess) {
  set_env({});
  auto c = dp::Context::from_environment();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rank, 0);
  EXPECT_EQ(c->world_size, 1);
  EXPECT_EQ(c->local_rank, 0);
  EXPECT_TRUE(c->rdv_addr.empty());
  EXPECT_TRUE(c->tiles.empty());
}

TEST(Context, StepOptionsAreReadWithThePluginsParser) {
  set_env({"DP_OPTIONS=--dp-world=auto --dp-tiles=2 --dp-master-port=29500", "DP_TILES=2,3"});
  auto c = dp::Context::from_environment();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tiles_per_task, 2);
  // The tiles disagree with the options: one of them was set by hand.
  set_env({"DP_OPTIONS=--dp-world=auto --dp-tiles=2", "DP_TILES=2"});
  auto bad = dp::Context::from_environment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--dp-tiles=2"), std::string::npos) << bad.error().message;
  // The same bounds as srun's option: a value srun would refuse is refused.
  set_env({"DP_OPTIONS=--dp-world=auto --dp-tiles=0"});
  auto zero = dp::Context::from_environment();
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("DP_OPTIONS"), std::string::npos) << zero.error().message;
}

TEST(Context, PluginVariables) {
  set_env({"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4", "NODE_RANK=1",
           "GROUP_RANK=1", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "DP_RDV_ADDR=10.0.0.1:4000",
           "DP_RDV_SECRET=abcdef", "DP_JOB_ID=42", "DP_STEP_ID=0", "DP_TILES=4,5,6,7"});
  auto c = dp::Context::from_environment();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rank, 5);
  EXPECT_EQ(c->world_size, 8);
  EXPECT_EQ(c->local_rank, 1);
  EXPECT_EQ(c->local_world_size, 4);
  EXPECT_EQ(c->node_rank, 1);
  EXPECT_EQ(c->master_addr, "10.0.0.1");
  EXPECT_EQ(c->master_port, 29500);
  EXPECT_EQ(c->rdv_addr, "10.0.0.1:4000");
  EXPECT_EQ(c->secret, "abcdef");
  EXPECT_EQ(c->job_id, "42");
  EXPECT_EQ(c->step_id, "0");
  EXPECT_EQ(c->tiles, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Context, TorchrunVariablesAlone) {
  set_env({"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "GROUP_RANK=3",
           "MASTER_ADDR=127.0.0.1", "MASTER_PORT=6000"});
  auto c = dp::Context::from_environment();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->world_size, 2);
  EXPECT_EQ(c->node_rank, 3);  // torchrun's GROUP_RANK
  EXPECT_TRUE(c->rdv_addr.empty());
}

TEST(Context, LocalWorldSizeMayBeOmitted) {
  set_env({"RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1"});
  auto c = dp::Context::from_environment();
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->local_rank, 1);
  EXPECT_EQ(c->local_world_size, 4);
}

struct BadCase {
  std::vector<std::string_view> env;  // NAME=VALUE words
  std::string names;                  // the error must name this
};

TEST(Context, BadValuesNameTheVariable) {
  const BadCase cases[] = {
      {{"RANK=0"}, "WORLD_SIZE"},
      {{"WORLD_SIZE=2"}, "RANK"},
      {{"RANK=2", "WORLD_SIZE=2"}, "RANK"},
      {{"RANK=x", "WORLD_SIZE=2"}, "RANK"},
      {{"RANK=0", "WORLD_SIZE=0"}, "WORLD_SIZE"},
      {{"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=70000"}, "MASTER_PORT"},
      {{"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=2", "LOCAL_WORLD_SIZE=2"}, "LOCAL_RANK"},
      {{"DP_TILES=0,,1"}, "DP_TILES"},
      {{"DP_TILES=-1"}, "DP_TILES"},
      {{"DP_RDV_ADDR=h:1"}, "DP_RDV_SECRET"},
  };
  for (const auto& bc : cases) {
    set_env(bc.env);
    auto c = dp::Context::from_environment();
    ASSERT_FALSE(c.ok()) << "accepted a bad environment naming " << bc.names;
    EXPECT_EQ(c.error().code, dp::Errc::invalid_argument);
    EXPECT_NE(c.error().message.find(bc.names), std::string::npos) << c.error().message;
    EXPECT_EQ(c.error().message.find('\n'), std::string::npos) << "one line only";
  }
}

TEST(Context, SecretNeverInErrors) {
  set_env({"DP_RDV_ADDR=h:1", "DP_RDV_SECRET=topsecretvalue", "DP_TILES=bad"});
  auto c = dp::Context::from_environment();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.find("topsecretvalue"), std::string::npos);
}

// Under --dp-max-restarts a task's MASTER_ADDR is its node agent's store on
// 127.0.0.1: a route towards it would publish 127.0.0.1 to the other nodes.
TEST(Context, PeersAreRoutedTowardsAnAddressEveryNodeReaches) {
  dp::Context c;
  EXPECT_EQ(c.route_host(), "");
  c.rdv_addr = "10.0.0.1:4000";
  EXPECT_EQ(c.route_host(), "10.0.0.1");
  c.master_addr = "10.0.0.7";
  EXPECT_EQ(c.route_host(), "10.0.0.7");
  for (const char* loop : {"127.0.0.1", "127.1.2.3", "localhost", "::1"}) {
    c.master_addr = loop;
    EXPECT_EQ(c.route_host(), "10.0.0.1") << loop;
  }
  c.rdv_addr.clear();  // no daemon: the loopback is all there is (one node)
  EXPECT_EQ(c.route_host(), "::1");
}

dp::Context world(int n) {
  dp::Context c;
  c.world_size = n;
  return c;
}

TEST(BackendChoice, Rules) {
  set_env({});
  using dp::Backend;
  auto r = [](const dp::Context& c, Backend b, int gpus) {
    dp::InitOptions o;
    o.backend = b;
    return dp::detail::resolve_options(c, o, gpus);
  };
  EXPECT_EQ(r(world(1), Backend::automatic, 0)->backend, Backend::single);
  EXPECT_EQ(r(world(1), Backend::automatic, 4)->backend, Backend::single);
  EXPECT_EQ(r(world(1), Backend::gloo, 0)->backend, Backend::single);
  EXPECT_EQ(r(world(1), Backend::nccl, 0)->backend, Backend::nccl);
  EXPECT_EQ(r(world(4), Backend::automatic, 0)->backend, Backend::gloo);
  EXPECT_EQ(r(world(4), Backend::automatic, 2)->backend, Backend::nccl);
  EXPECT_EQ(r(world(4), Backend::gloo, 2)->backend, Backend::gloo);
  EXPECT_FALSE(r(world(4), Backend::single, 0).ok());

  setenv("DP_BACKEND", "gloo", 1);
  EXPECT_EQ(r(world(4), Backend::automatic, 2)->backend, Backend::gloo);
  setenv("DP_BACKEND", "nccl", 1);
  EXPECT_EQ(r(world(4), Backend::automatic, 0)->backend, Backend::nccl);
  setenv("DP_BACKEND", "mpi", 1);
  auto bad = r(world(4), Backend::automatic, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("DP_BACKEND"), std::string::npos);
  unsetenv("DP_BACKEND");

  setenv("DP_TIMEOUT_MS", "1234", 1);
  EXPECT_EQ(r(world(2), Backend::gloo, 0)->timeout.count(), 1234);
  setenv("DP_TIMEOUT_MS", "0", 1);
  auto badt = r(world(2), Backend::gloo, 0);
  ASSERT_FALSE(badt.ok());
  EXPECT_NE(badt.error().message.find("DP_TIMEOUT_MS"), std::string::npos);
  unsetenv("DP_TIMEOUT_MS");

  EXPECT_TRUE(r(world(2), Backend::gloo, 0)->shared_memory);
  setenv("DP_SHM", "off", 1);
  EXPECT_FALSE(r(world(2), Backend::gloo, 0)->shared_memory);
  setenv("DP_SHM", "auto", 1);
  EXPECT_TRUE(r(world(2), Backend::gloo, 0)->shared_memory);
  setenv("DP_SHM", "yes", 1);
  auto bads = r(world(2), Backend::gloo, 0);
  ASSERT_FALSE(bads.ok());
  EXPECT_NE(bads.error().message.find("DP_SHM='yes'"), std::string::npos) << bads.error().message;
  EXPECT_NE(bads.error().message.find("auto"), std::string::npos);
  unsetenv("DP_SHM");
}

TEST(BackendChoice, ProgressSwitchIsStrict) {
  set_env({});
  dp::InitOptions o;
  setenv("DP_PROGRESS", "off", 1);
  EXPECT_TRUE(dp::detail::resolve_options(world(2), o, 0).ok());
  setenv("DP_PROGRESS", "0", 1);
  auto bad = dp::detail::resolve_options(world(2), o, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("DP_PROGRESS='0'"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("use on"), std::string::npos) << bad.error().message;
  unsetenv("DP_PROGRESS");
}

TEST(Init, WorldOneGivesAWorkingSingleCommunicator) {
  set_env({});
  auto comm = dp::init();
  ASSERT_TRUE(comm.ok()) << comm.error().message;
  auto& c = **comm;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.backend(), dp::Backend::single);
  float v[3] = {1.5f, -2.0f, 3.0f};
  ASSERT_TRUE(c.all_reduce(v, 3, dp::DType::f32, dp::ReduceOp::avg).ok());
  EXPECT_EQ(v[1], -2.0f);
  auto w = c.all_reduce_async(v, 3, dp::DType::f32, dp::ReduceOp::sum);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE((*w)->wait().ok());
  float out[3] = {};
  ASSERT_TRUE(c.all_gather(v, out, 3, dp::DType::f32).ok());
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_TRUE(c.broadcast(v, 3, dp::DType::f32, 0).ok());
  EXPECT_FALSE(c.broadcast(v, 3, dp::DType::f32, 1).ok());
  EXPECT_FALSE(c.all_reduce(nullptr, 3, dp::DType::f32, dp::ReduceOp::sum).ok());
  EXPECT_TRUE(c.barrier().ok());
}

TEST(Init, WorldTwoWithoutAStoreRefusesClearly) {
  set_env(
      {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500", "DP_BACKEND=gloo"});
  auto comm = dp::init();
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.error().message.find("DP_RDV_ADDR"), std::string::npos) << comm.error().message;
  EXPECT_NE(comm.error().message.find("DP_STORE_DIR"), std::string::npos) << comm.error().message;
}

TEST(Init, NcclWithoutADeviceFailsAtOnce) {
  set_env({"DP_BACKEND=nccl"});
  auto comm = dp::init();
  if (dp::detail::usable_cuda_devices() > 0) {
    // On a GPU host, world 1 over NCCL needs no store and works.
    ASSERT_TRUE(comm.ok()) << comm.error().message;
    EXPECT_EQ((*comm)->backend(), dp::Backend::nccl);
    GTEST_SKIP()
        << "a CUDA device is visible: checked that NCCL at world 1 starts without a store instead";
  }
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.error().code, dp::Errc::unavailable);
  EXPECT_NE(comm.error().message.find("CUDA"), std::string::npos) << comm.error().message;
}

}  // namespace
