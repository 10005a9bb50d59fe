// libdp without its NCCL module (the base package alone): this program links
// libdp's objects and has no slurm-dp/libdp-nccl.so beside it, as a node
// without slurm-dp-cuda. Asking for NCCL names the package; everything else
// works as before.
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends.hpp"
#include "dp/communicator.hpp"

namespace {

class NoNcclModule : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "DP_RDV_ADDR",
                          "DP_RDV_SECRET", "DP_BACKEND", "DP_TILES", "DP_OPTIONS"})
      unsetenv(v);
  }
};

TEST_F(NoNcclModule, CountsNoDevices) { EXPECT_EQ(dp::detail::usable_cuda_devices(), 0); }

TEST_F(NoNcclModule, NcclIsRefusedNamingThePackageAndTheFix) {
  setenv("DP_BACKEND", "nccl", 1);
  auto comm = dp::init();
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.error().code, dp::Errc::unavailable);
  const std::string& m = comm.error().message;
  EXPECT_NE(m.find("not installed"), std::string::npos) << m;
  EXPECT_NE(m.find("slurm-dp-cuda"), std::string::npos) << m;
  EXPECT_NE(m.find("libdp-nccl.so"), std::string::npos) << m;
  EXPECT_NE(m.find("DP_BACKEND=gloo"), std::string::npos) << m;
}

TEST_F(NoNcclModule, AutomaticChoiceStillWorks) {
  auto comm = dp::init();
  ASSERT_TRUE(comm.ok()) << comm.error().message;
  EXPECT_EQ((*comm)->backend(), dp::Backend::single);
  float v[2] = {1.0f, 2.0f};
  EXPECT_TRUE((*comm)->all_reduce(v, 2, dp::DType::f32, dp::ReduceOp::sum).ok());
}

}  // namespace
