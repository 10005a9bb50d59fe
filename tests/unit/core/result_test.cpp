#include "dp/result.hpp"

#include <gtest/gtest.h>

namespace {
dp::Result<int> half(int x) {
  if (x % 2) return dp::make_error(dp::Errc::invalid_argument, "odd");
  return x / 2;
}
dp::Result<void> quarter(int x, int* out) {
  auto h = half(x);
  DP_TRY(h);
  auto q = half(*h);
  DP_TRY(q);
  *out = *q;
  return {};
}
}  // namespace

TEST(Result, PropagatesFirstError) {
  int out = 0;
  EXPECT_TRUE(quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  auto r = quarter(6, &out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, dp::Errc::invalid_argument);
  EXPECT_STREQ(dp::errc_name(r.error().code), "invalid_argument");
}
