#include "dp/result.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

TEST(Result, TrailPathsAreRelativeToTheTreeWhateverTheBuildFolder) {
  EXPECT_STREQ(dp::detail::tree_path("../../../core/layout.cpp"), "core/layout.cpp");
  EXPECT_STREQ(dp::detail::tree_path("../core/layout.cpp"), "core/layout.cpp");
  EXPECT_STREQ(dp::detail::tree_path("core/layout.cpp"), "core/layout.cpp");
  EXPECT_STREQ(dp::detail::tree_path("..core/x.cpp"), "..core/x.cpp");
  EXPECT_STREQ(dp::detail::tree_path(""), "");
}

TEST(Result, TrailSaysWhereTheErrorWasMadeAndPassedOn) {
  int out = 0;
  auto r = quarter(6, &out);  // half(6) is fine, half(3) fails
  ASSERT_FALSE(r.ok());
  const auto& trail = r.error().trail;
  ASSERT_EQ(trail.size(), 2u);  // make_error in half(), then DP_TRY(q) in quarter()
  for (const auto& p : trail) EXPECT_STREQ(p.file, "tests/unit/core/result_test.cpp");
  EXPECT_GT(trail[1].line, trail[0].line);

  ::unsetenv("DP_DEBUG");
  EXPECT_EQ(dp::describe(r.error()), r.error().message);
  ::setenv("DP_DEBUG", "1", 1);
  const std::string shown = dp::describe(r.error());
  ::unsetenv("DP_DEBUG");
  EXPECT_EQ(shown, r.error().message +
                       "\n  -> tests/unit/core/result_test.cpp:" + std::to_string(trail[0].line) +
                       "\n  -> tests/unit/core/result_test.cpp:" + std::to_string(trail[1].line));
}

TEST(Result, AWrappedErrorKeepsItsCodeAndTrail) {
  int out = 0;
  auto r = quarter(6, &out);
  ASSERT_FALSE(r.ok());
  const dp::Error w = dp::wrap_error(r.error(), "in other words: " + r.error().message);
  EXPECT_EQ(w.code, r.error().code);
  EXPECT_EQ(w.message, "in other words: " + r.error().message);
  ASSERT_EQ(w.trail.size(), r.error().trail.size() + 1);  // where it began, then each hand
  EXPECT_EQ(w.trail[0].line, r.error().trail[0].line);
  EXPECT_GT(w.trail.back().line, r.error().trail.back().line);
}
