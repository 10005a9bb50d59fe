// Which CUDA device a task drives: pure, so tested without a GPU.
#include "cuda_device.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dp::detail;

TEST(CudaDevice, SelectionFromMaskAndLocalRank) {
  auto none = select_cuda_device({}, 0, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, dp::Errc::unavailable);
  EXPECT_NE(none.error().message.find("no usable CUDA device"), std::string::npos);

  EXPECT_EQ(*select_cuda_device({}, 3, 4), 3);  // torchrun: LOCAL_RANK
  EXPECT_FALSE(select_cuda_device({}, 4, 4).ok());
  EXPECT_EQ(*select_cuda_device({4, 5}, 2, 2), 0);  // mask applied: renumbered
  EXPECT_EQ(*select_cuda_device({6, 7}, 3, 8), 6);  // all visible: first tile
  auto bad = select_cuda_device({9}, 0, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("DP_TILES"), std::string::npos);
}
