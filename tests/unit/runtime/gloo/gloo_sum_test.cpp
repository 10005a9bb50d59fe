// Which sums go by recursive doubling (gloo_sum.hpp): small buffers on a
// power-of-two world; the rest take gloo's ring. The sums themselves, every
// size and dtype at worlds 1 to 4 over TCP: multiprocess_test.cpp.
#include "gloo_sum.hpp"

#include <gtest/gtest.h>

namespace dp::detail {
namespace {

TEST(GlooSum, SmallBuffersOnAPowerOfTwoWorldGoByDoubling) {
  EXPECT_TRUE(sums_by_doubling(2, 4));
  EXPECT_TRUE(sums_by_doubling(4, kDoublingMaxBytes));
  EXPECT_TRUE(sums_by_doubling(1024, 64 << 10));
  EXPECT_FALSE(sums_by_doubling(2, kDoublingMaxBytes + 1)) << "bandwidth-bound: the ring";
  EXPECT_FALSE(sums_by_doubling(3, 4)) << "no partner at every step";
  EXPECT_FALSE(sums_by_doubling(6, 4));
  EXPECT_FALSE(sums_by_doubling(1, 4)) << "nobody to exchange with";
}

}  // namespace
}  // namespace dp::detail
