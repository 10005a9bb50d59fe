// The one integer parser and the table of settings.
#include "dp/params.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

namespace {

std::string reason(std::string_view text, long long min, long long max) {
  auto n = dp::parse_whole_number(text, min, max);
  return n ? "ok" : n.error().message;
}

TEST(WholeNumber, SaysWhyAValueIsRefused) {
  EXPECT_EQ(reason("42", 1, 100), "ok");
  EXPECT_EQ(reason("", 1, 100), "empty value");
  EXPECT_EQ(reason("+4", 1, 100), "not a whole number");
  EXPECT_EQ(reason(" 4", 1, 100), "not a whole number");
  EXPECT_EQ(reason("4 ", 1, 100), "unexpected ' ' after the number");
  EXPECT_EQ(reason("8x", 1, 100), "unexpected 'x' after the number");
  EXPECT_EQ(reason("-1", 0, 100), "negative");
  EXPECT_EQ(reason("0", 1, 100), "zero");
  EXPECT_EQ(reason("101", 1, 100), "out of range");
  EXPECT_EQ(reason("99999999999999999999", 1, 100), "too large");
  EXPECT_EQ(reason("-5", -10, 10), "ok");
}

TEST(WholeNumber, SixtyFourBitSeedsFit) {
  auto n = dp::parse_whole_number_u64("18446744073709551615", 0, UINT64_MAX);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, UINT64_MAX);
  EXPECT_FALSE(dp::parse_whole_number_u64("-1", 0, UINT64_MAX).ok());
}

TEST(WholeNumber, IntegerMessageNamesTheValueAndTheFix) {
  auto n = dp::parse_integer("8x", 0, 4096, "devices_per_node", "8");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message,
            "devices_per_node=8x: unexpected 'x' after the number; use a whole number from 0 to "
            "4096, e.g. devices_per_node=8");
}

TEST(Params, TableIsWellFormed) {
  std::set<std::string_view> names;
  bool integers_done = false;
  for (const auto& p : dp::param_specs()) {
    EXPECT_EQ(p.name.rfind("DP_", 0), 0u) << p.name;
    EXPECT_TRUE(names.insert(p.name).second) << p.name << " twice";
    EXPECT_FALSE(p.meaning.empty()) << p.name;
    if (p.integer) {
      EXPECT_FALSE(integers_done) << p.name << ": integers come first, in Param order";
      EXPECT_LE(p.min, p.def) << p.name;
      EXPECT_LE(p.def, p.max) << p.name;
    } else {
      integers_done = true;
    }
  }
  EXPECT_EQ(dp::param_spec(dp::Param::timeout_ms).name, "DP_TIMEOUT_MS");
  EXPECT_EQ(dp::param_spec(dp::Param::shm_slice_ms).name, "DP_SHM_SLICE_MS");
}

TEST(Params, BadValueNamesTheVariable) {
  auto n = dp::parse_param(dp::Param::abort_grace_ms, "soon");
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message,
            "DP_ABORT_GRACE_MS='soon' is not an integer in [0, 600000] (not a whole number); fix "
            "or unset the variable");
  ::setenv("DP_SHM_SPIN_US", "-3", 1);
  auto c = dp::check_params();
  ::unsetenv("DP_SHM_SPIN_US");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("DP_SHM_SPIN_US='-3'"), std::string::npos) << c.error().message;
}

TEST(Params, DescriptionShowsEveryIntegerAndHidesTheSecret) {
  ::setenv("DP_RDV_SECRET", "00ff00ff", 1);
  const std::string d = dp::describe_params();
  ::unsetenv("DP_RDV_SECRET");
  EXPECT_NE(d.find("DP_TIMEOUT_MS="), std::string::npos) << d;
  EXPECT_NE(d.find("DP_SHM_SLICE_MS="), std::string::npos) << d;
  EXPECT_NE(d.find("DP_RDV_SECRET=(set)"), std::string::npos) << d;
  EXPECT_EQ(d.find("00ff00ff"), std::string::npos) << d;
}

}  // namespace
