#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sampler.hpp"

namespace dpt {
namespace {

TEST(Sampler, RanksGetDisjointSlicesOfOnePermutationWithDropLast) {
  const size_t n = 103;
  const int world = 4;
  std::set<uint32_t> seen;
  for (int r = 0; r < world; ++r) {
    DistributedSampler s(n, world, r, 9);
    std::vector<uint32_t> idx;
    s.indices(0, idx);
    EXPECT_EQ(idx.size(), 25u);  // floor(103 / 4)
    for (uint32_t i : idx) {
      EXPECT_LT(i, n);
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " on two ranks";
    }
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(Sampler, ShuffleDependsOnSeedAndEpochOnly) {
  DistributedSampler a(1000, 1, 0, 5), b(1000, 1, 0, 5), c(1000, 1, 0, 6);
  std::vector<uint32_t> a0, b0, a1, c0;
  a.indices(0, a0);
  b.indices(0, b0);
  a.indices(1, a1);
  c.indices(0, c0);
  EXPECT_EQ(a0, b0);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a0, c0);
  std::vector<uint32_t> sorted = a0;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
}

// The property the equivalence of world W batch B and world 1 batch W*B
// rests on: step k of every rank together covers step k of world 1.
TEST(Sampler, WorldTwoBatchBCoversWorldOneBatchTwoB) {
  const size_t n = 1001;
  const int B = 16;
  DistributedSampler one(n, 1, 0, 3), r0(n, 2, 0, 3), r1(n, 2, 1, 3);
  EXPECT_EQ(one.batches_per_epoch(2 * B), r0.batches_per_epoch(B));
  std::vector<uint32_t> i1, i0, i01;
  for (int epoch = 0; epoch < 3; ++epoch) {
    one.indices(epoch, i1);
    r0.indices(epoch, i0);
    r1.indices(epoch, i01);
    for (size_t k = 0; k < r0.batches_per_epoch(B); ++k) {
      std::multiset<uint32_t> a(i1.begin() + k * 2 * B, i1.begin() + (k + 1) * 2 * B);
      std::multiset<uint32_t> b(i0.begin() + k * B, i0.begin() + (k + 1) * B);
      b.insert(i01.begin() + k * B, i01.begin() + (k + 1) * B);
      ASSERT_EQ(a, b) << "epoch " << epoch << " step " << k;
    }
  }
}

}  // namespace
}  // namespace dpt
