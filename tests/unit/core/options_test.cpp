// Option parsing: every bad value names the option and says the fix.
#include "dp/options.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

dp::Result<void> apply(dp::Options& o, const char* name, const char* value) {
  return dp::apply_option(o, name, value);
}

struct BadCase {
  const char* option;
  const char* value;
  const char* expect_in_message;
};

class BadOption : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadOption, IsRefusedWithOptionNameAndFix) {
  const auto& c = GetParam();
  dp::Options o;
  auto r = apply(o, c.option, c.value);
  ASSERT_FALSE(r.ok()) << c.option << "=" << (c.value ? c.value : "(null)");
  EXPECT_EQ(r.error().code, dp::Errc::invalid_argument);
  const std::string& m = r.error().message;
  EXPECT_NE(m.find(std::string("--") + c.option), std::string::npos) << m;
  EXPECT_NE(m.find(c.expect_in_message), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  // Says what to do.
  EXPECT_TRUE(m.find("use ") != std::string::npos || m.find("write ") != std::string::npos) << m;
  EXPECT_FALSE(o.any()) << "a refused value must not be kept";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOption,
    ::testing::Values(
        BadCase{"dp-world", "abc", "not a whole number"}, BadCase{"dp-world", "0", "zero"},
        BadCase{"dp-world", "-4", "negative"},
        BadCase{"dp-world", "99999999999999999999", "too large"},
        BadCase{"dp-world", "4x", "unexpected 'x'"}, BadCase{"dp-world", "", "empty"},
        BadCase{"dp-world", "+4", "not a whole number"},
        BadCase{"dp-world", " 4", "not a whole number"},
        BadCase{"dp-world", "3000000000", "out of range"},
        BadCase{"dp-world", "Auto", "not a whole number"},
        BadCase{"dp-world", nullptr, "missing value"}, BadCase{"dp-tiles", "0", "zero"},
        BadCase{"dp-tiles", "-1", "negative"}, BadCase{"dp-tiles", "four", "not a whole number"},
        BadCase{"dp-tiles", "4.5", "unexpected '.5'"},
        BadCase{"dp-tiles", "100000", "out of range"},
        BadCase{"dp-tiles", "18446744073709551617", "too large"},
        BadCase{"dp-tiles", nullptr, "missing value"},
        BadCase{"dp-master-port", "80", "out of range"},
        BadCase{"dp-master-port", "65536", "out of range"},
        BadCase{"dp-master-port", "29500abc", "unexpected 'abc'"},
        BadCase{"dp-master-port", "-1", "negative"}, BadCase{"dp-explain", "yes", "takes no value"},
        BadCase{"dp-verbose", "1", "takes no value"}, BadCase{"dp-report", "", "missing file name"},
        BadCase{"dp-report", nullptr, "missing file name"},
        BadCase{"dp-report", "a\nb", "control character"}));

TEST(Options, ReportFile) {
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-report", "run-%j.%s.json").ok());
  EXPECT_EQ(o.report, "run-%j.%s.json");
  EXPECT_TRUE(o.any());
  dp::Options top;
  ASSERT_TRUE(apply(top, "dp-report", "/tmp/x.json").ok());
  EXPECT_EQ(dp::overlay(o, top).report, "/tmp/x.json");
}

TEST(Options, AutoAndNumbers) {
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-world", "auto").ok());
  EXPECT_EQ(o.world, 0);
  ASSERT_TRUE(apply(o, "dp-world", "32").ok());
  EXPECT_EQ(o.world, 32);
  ASSERT_TRUE(apply(o, "dp-tiles", "4").ok());
  EXPECT_EQ(o.tiles, 4);
  ASSERT_TRUE(apply(o, "dp-master-port", "auto").ok());
  EXPECT_EQ(o.master_port, 0);
  ASSERT_TRUE(apply(o, "dp-master-port", "29500").ok());
  EXPECT_EQ(o.master_port, 29500);
  ASSERT_TRUE(apply(o, "dp-explain", nullptr).ok());
  ASSERT_TRUE(apply(o, "dp-verbose", "").ok());
  EXPECT_TRUE(o.explain.value_or(false));
  EXPECT_TRUE(o.verbose.value_or(false));
}

TEST(Options, CallbackTwiceWithSameValueIsHarmless) {
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-tiles", "2").ok());
  ASSERT_TRUE(apply(o, "dp-tiles", "2").ok());
  EXPECT_EQ(o.tiles, 2);
}

TEST(Options, NothingGivenMeansOff) {
  dp::Options o;
  EXPECT_FALSE(o.any());
  ASSERT_TRUE(apply(o, "dp-tiles", "1").ok());
  EXPECT_TRUE(o.any());
}

TEST(Options, StepValuesWinOverJobValues) {
  dp::Options job, step;
  ASSERT_TRUE(apply(job, "dp-tiles", "4").ok());
  ASSERT_TRUE(apply(job, "dp-world", "8").ok());
  ASSERT_TRUE(apply(step, "dp-world", "auto").ok());
  auto o = dp::overlay(job, step);
  EXPECT_EQ(o.world, 0);
  EXPECT_EQ(o.tiles, 4);
  EXPECT_FALSE(o.master_port.has_value());
}

TEST(Options, UnknownNameIsRefused) {
  dp::Options o;
  auto r = apply(o, "dp-wrold", "auto");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--dp-wrold"), std::string::npos);
}

TEST(Options, SpecsCoverEveryOptionOnce) {
  const auto& specs = dp::option_specs();
  ASSERT_EQ(specs.size(), 6u);
  for (const auto& s : specs) {
    EXPECT_EQ(std::string(s.usage).rfind("[slurm-dp]", 0), 0u) << s.name;
    dp::Options o;
    // Each registered name is accepted by apply_option.
    auto r =
        apply(o, s.name, s.arginfo ? (std::string(s.name) == "dp-tiles" ? "1" : "auto") : nullptr);
    EXPECT_TRUE(r.ok()) << s.name << ": " << (r.ok() ? "" : r.error().message);
  }
}

}  // namespace
