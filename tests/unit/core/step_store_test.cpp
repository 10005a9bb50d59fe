// Where an unmodified PyTorch program's ranks meet (core/src/step_store.cpp):
// the option wins over the site, a launcher step keeps torchrun's store,
// --dp-master-socket=pass with the step's store is refused naming both, and
// a task of the step's store gets its node's store and no port to bind.
#include "dp/step_store.hpp"

#include <gtest/gtest.h>

#include <map>

#include "dp/env_names.hpp"

namespace dp {
namespace {

LaunchShape per_task() { return LaunchShape{false, "", 2}; }

TEST(StepStore, TheOptionWinsOverTheSite) {
  SiteConfig site;
  Options o;
  EXPECT_EQ(*store_kind(o, site, per_task()), StoreKind::rank0);  // this round's default
  site.step_store = true;
  EXPECT_EQ(*store_kind(o, site, per_task()), StoreKind::step);
  o.step_store = false;
  EXPECT_EQ(*store_kind(o, site, per_task()), StoreKind::rank0);
  site.step_store = false;
  o.step_store = true;
  EXPECT_EQ(*store_kind(o, site, per_task()), StoreKind::step);
}

TEST(StepStore, EachStoreHasTheNameTheStartUpLineAndTheReportSay) {
  EXPECT_STREQ(store_kind_name(StoreKind::rank0), "rank0");
  EXPECT_STREQ(store_kind_name(StoreKind::step), "step");
  EXPECT_STREQ(store_kind_name(StoreKind::launcher), "launcher");
}

TEST(StepStore, ALauncherStepKeepsTorchrunsStoreAndSaysSo) {
  Options o;
  o.step_store = true;
  auto k = store_kind(o, SiteConfig{}, LaunchShape{true, "torchrun", 2});
  ASSERT_TRUE(k);
  EXPECT_EQ(*k, StoreKind::launcher);
  EXPECT_NE(store_line(*k).find("torchrun's own"), std::string::npos) << store_line(*k);
  EXPECT_TRUE(store_environment(*k, "29500").empty());  // MASTER_* stay torchrun's
}

TEST(StepStore, PassingAMasterSocketWithTheStepsStoreIsRefusedNamingBoth) {
  Options o;
  o.step_store = true;
  o.master_socket = dp::MasterSocket::pass;
  auto k = store_kind(o, SiteConfig{}, per_task());
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().code, Errc::invalid_argument);
  EXPECT_NE(k.error().message.find("--dp-master-socket=pass"), std::string::npos);
  EXPECT_NE(k.error().message.find("--dp-store=step"), std::string::npos);
  EXPECT_NE(k.error().message.find("--dp-store=rank0"), std::string::npos);  // the fix
}

TEST(StepStore, EveryTaskIsAClientOfItsNodesStore) {
  std::map<std::string, std::string> env;
  for (auto& [k, v] : store_environment(StoreKind::step, "41234")) env[k] = v;
  EXPECT_EQ(env[env::kMasterAddr], "127.0.0.1");
  EXPECT_EQ(env[env::kMasterPort], "41234");
  EXPECT_EQ(env[env::kTorchelasticUseAgentStore], "True");
  EXPECT_EQ(env[env::kTorchelasticRestartCount], "0");
  EXPECT_EQ(env[env::kStore], "step");
  EXPECT_TRUE(store_environment(StoreKind::rank0, "29500").empty());
  EXPECT_NE(store_line(StoreKind::rank0).find("rank 0"), std::string::npos);
  EXPECT_NE(store_line(StoreKind::step).find("none binds a port"), std::string::npos);
}

}  // namespace
}  // namespace dp
