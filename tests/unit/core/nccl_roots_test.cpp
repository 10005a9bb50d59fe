// NCCL's several bootstrap roots: how many, which rank creates each ID (the
// first rank of each of NCCL's segments).
#include "dp/nccl_roots.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace dp {
namespace {

TEST(NcclRoots, OneRootPer128RanksRoundedUp) {
  EXPECT_EQ(nccl_root_count(1, 128), 1);
  EXPECT_EQ(nccl_root_count(128, 128), 1);
  EXPECT_EQ(nccl_root_count(129, 128), 2);
  EXPECT_EQ(nccl_root_count(131072, 128), 1024);
  EXPECT_EQ(nccl_root_count(4, 2), 2);
  EXPECT_EQ(nccl_root_count(4, 0), 1);  // never zero IDs
}

// NCCL's own split (bootstrap.cc): segment r starts at r * (n / roots) +
// min(r, n % roots). Its first rank, and only it, creates ID r.
TEST(NcclRoots, EachSegmentsFirstRankCreatesItsId) {
  for (int world : {1, 2, 4, 5, 7, 129, 1000}) {
    for (int roots = 1; roots <= world && roots <= 9; ++roots) {
      std::vector<int> creators;
      for (int rank = 0; rank < world; ++rank) {
        const int id = nccl_root_index(rank, world, roots);
        if (id < 0) continue;
        ASSERT_EQ(id, static_cast<int>(creators.size()))
            << world << " ranks, " << roots << " roots";
        creators.push_back(rank);
      }
      ASSERT_EQ(static_cast<int>(creators.size()), roots)
          << world << " ranks, " << roots << " roots";
      for (int r = 0; r < roots; ++r)
        EXPECT_EQ(creators[r], r * (world / roots) + std::min(r, world % roots));
    }
  }
  // 5 ranks over 2 roots: segments 0-2 and 3-4.
  EXPECT_EQ(nccl_root_index(3, 5, 2), 1);
  EXPECT_EQ(nccl_root_index(2, 5, 2), -1);
}

}  // namespace
}  // namespace dp
