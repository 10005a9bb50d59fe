// Option parsing: every bad value names the option and says the fix.
#include "dp/options.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
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

const std::string kLongName(100'000, 'r');  // more than the kernel's PATH_MAX

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
        BadCase{"dp-report", "a\nb", "control character"},
        BadCase{"dp-report", kLongName.c_str(), "at most 4095 bytes"}));

TEST(Options, AnEchoedValueIsCutToAbout64Characters) {
  dp::Options o;
  const std::string huge(100'000, '7');
  auto r = dp::apply_option(o, "dp-world", huge.c_str());
  ASSERT_FALSE(r);
  EXPECT_LT(r.error().message.size(), 400u) << r.error().message.size();
  EXPECT_NE(r.error().message.find("...(100000 bytes)"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--dp-world"), std::string::npos);
}

TEST(Options, ReportFile) {
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-report", "run-%j.%s.json").ok());
  EXPECT_EQ(o.report, "run-%j.%s.json");
  EXPECT_TRUE(o.any());
  dp::Options top;
  ASSERT_TRUE(apply(top, "dp-report", "/tmp/x.json").ok());
  EXPECT_EQ(dp::overlay(o, top).report, "/tmp/x.json");
}

TEST(Options, OnFailureIsTheUsersChoiceOverTheSites) {
  dp::Options o;
  EXPECT_FALSE(o.on_failure) << "unset: the site's on_failure";
  ASSERT_TRUE(apply(o, "dp-on-failure", "keep").ok());
  EXPECT_EQ(o.on_failure, dp::OnFailure::keep);
  EXPECT_TRUE(o.any());
  auto back = dp::parse_node_options(dp::format_node_options(o), "DP_OPTIONS");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->on_failure, dp::OnFailure::keep);
  dp::Options end;
  ASSERT_TRUE(apply(end, "dp-on-failure", "end").ok());
  EXPECT_EQ(dp::overlay(o, end).on_failure, dp::OnFailure::end);
  auto bad = apply(o, "dp-on-failure", "maybe");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--dp-on-failure"), std::string::npos) << bad.error().message;
}

TEST(Options, MasterSocketIsPassedOnlyWhenAsked) {
  dp::Options o;
  EXPECT_FALSE(o.passes_master_socket());
  ASSERT_TRUE(apply(o, "dp-master-socket", "pass").ok());
  EXPECT_TRUE(o.any());
  auto back = dp::parse_node_options(dp::format_node_options(o), "DP_OPTIONS");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->master_socket, dp::MasterSocket::pass)
      << "the nodes must see it: rank 0's slurmstepd acts";
  dp::Options close;
  ASSERT_TRUE(apply(close, "dp-master-socket", "close").ok());
  EXPECT_EQ(dp::overlay(o, close).master_socket, dp::MasterSocket::close);
  auto bad = apply(o, "dp-master-socket", "yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--dp-master-socket=yes"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("pass"), std::string::npos);
  dp::Options share;
  ASSERT_TRUE(apply(share, "dp-master-socket", "share").ok());
  auto shared = dp::parse_node_options(dp::format_node_options(share), "DP_OPTIONS");
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(shared->master_socket, dp::MasterSocket::share);
  EXPECT_FALSE(shared->passes_master_socket());
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

TEST(Options, HangTimeoutTakesADurationOrOff) {
  for (auto [text, seconds] : {std::pair{"20s", 20}, std::pair{"20", 20}, std::pair{"5m", 300},
                               std::pair{"2h", 7200}, std::pair{"off", 0}}) {
    dp::Options o;
    auto r = apply(o, "dp-hang-timeout", text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(o.hang_timeout_s, seconds) << text;
  }
  for (const char* bad : {"", "banana", "-5s", "0", "25h", "5d", "1.5m"}) {
    dp::Options o;
    auto r = apply(o, "dp-hang-timeout", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--dp-hang-timeout"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("=off"), std::string::npos)
        << "says the fix: " << r.error().message;
  }
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-on-hang", "end").ok());
  EXPECT_EQ(o.end_on_hang, true);
  EXPECT_FALSE(apply(o, "dp-on-hang", "kill").ok());
}

TEST(Options, StragglerIsNameOrOff) {
  dp::Options o;
  EXPECT_FALSE(o.straggler.has_value()) << "unset: the site's straggler";
  ASSERT_TRUE(apply(o, "dp-straggler", "off").ok());
  EXPECT_EQ(o.straggler, false);
  ASSERT_TRUE(apply(o, "dp-straggler", "name").ok());
  EXPECT_EQ(o.straggler, true);
  auto r = apply(o, "dp-straggler", "on");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--dp-straggler=name"), std::string::npos)
      << "says the fix: " << r.error().message;
  // srun's own, like the hang watch's: the daemon judges, nothing travels to the nodes.
  EXPECT_EQ(dp::format_node_options(o).find("straggler"), std::string::npos);
}

TEST(Options, SpecsCoverEveryOptionOnce) {
  const auto& specs = dp::option_specs();
  std::set<std::string> names;
  // A valid value of each option whose values are words (others take a number or auto).
  const std::map<std::string, const char*> sample = {
      {"dp-tiles", "1"},       {"dp-on-failure", "keep"}, {"dp-master-socket", "pass"},
      {"dp-store", "step"},    {"dp-ports", "3"},         {"dp-hang-timeout", "20s"},
      {"dp-on-hang", "end"},   {"dp-straggler", "off"},   {"dp-spares", "1"},
      {"dp-max-restarts", "2"}};
  for (const auto& s : specs) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " twice";
    EXPECT_EQ(std::string(s.usage).rfind("[slurm-dp]", 0), 0u) << s.name;
    dp::Options o;
    // Each registered name is accepted by apply_option.
    const auto it = sample.find(s.name);
    auto r = apply(o, s.name, s.arginfo ? (it != sample.end() ? it->second : "auto") : nullptr);
    EXPECT_TRUE(r.ok()) << s.name << ": " << (r.ok() ? "" : r.error().message);
  }
}

TEST(Options, SparesAndRestartsSetTheBudget) {
  dp::Options o;
  EXPECT_FALSE(o.restarts_programs());
  EXPECT_EQ(o.restart_budget(3), 0);
  ASSERT_TRUE(apply(o, "dp-spares", "2").ok());
  EXPECT_TRUE(o.restarts_programs());
  EXPECT_EQ(o.restart_budget(3), 3);  // the site's max_restarts
  ASSERT_TRUE(apply(o, "dp-max-restarts", "1").ok());
  EXPECT_EQ(o.restart_budget(3), 1);
  dp::Options in_place;
  ASSERT_TRUE(apply(in_place, "dp-max-restarts", "2").ok());
  EXPECT_TRUE(in_place.restarts_programs());
  EXPECT_EQ(in_place.restart_budget(5), 2);
  EXPECT_FALSE(apply(o, "dp-spares", "0").ok());
  EXPECT_FALSE(apply(o, "dp-max-restarts", "-1").ok());
  const auto back = dp::parse_node_options(dp::format_node_options(o), "DP_OPTIONS");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->spares, 2);
  EXPECT_EQ(back->max_restarts, 1);
}

TEST(NodeOptions, RoundTripThroughTheOneValue) {
  dp::Options o;
  ASSERT_TRUE(apply(o, "dp-world", "8").ok());
  ASSERT_TRUE(apply(o, "dp-tiles", "2").ok());
  ASSERT_TRUE(apply(o, "dp-master-port", "29501").ok());
  ASSERT_TRUE(apply(o, "dp-report", "x.json").ok());
  const std::string text = dp::format_node_options(o);
  EXPECT_EQ(text, "--dp-world=8 --dp-tiles=2 --dp-master-port=29501");
  auto back = dp::parse_node_options(text, "DP_OPTIONS");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->world, 8);
  EXPECT_EQ(back->tiles, 2);
  EXPECT_EQ(back->master_port, 29501);
  EXPECT_FALSE(back->report) << "srun's own options stay in srun";
  // A step of the site's default=on names no option: the world is auto.
  EXPECT_EQ(dp::format_node_options(dp::Options{}), "--dp-world=auto");
  dp::Options port_auto;
  ASSERT_TRUE(apply(port_auto, "dp-master-port", "auto").ok());
  EXPECT_EQ(dp::format_node_options(port_auto), "--dp-world=auto --dp-master-port=auto");
}

TEST(NodeOptions, BadValuesAreRefusedWithTheOptionsBounds) {
  for (const char* text :
       {"--dp-world=auto --dp-tiles=0", "--dp-world=auto --dp-master-port=80",
        "--dp-world=auto tiles=2", "--dp-world=auto --dp-bogus=1", "--dp-tiles=1", ""}) {
    auto r = dp::parse_node_options(text, "DP_OPTIONS");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find("DP_OPTIONS"), std::string::npos) << r.error().message;
  }
}

TEST(NodeOptions, ResolvedJobThenSrunThenSite) {
  dp::Options job, srun;
  ASSERT_TRUE(apply(job, "dp-tiles", "2").ok());
  ASSERT_TRUE(apply(job, "dp-master-port", "29501").ok());
  ASSERT_TRUE(apply(srun, "dp-tiles", "1").ok());
  auto o = dp::resolve_options(job, srun, false);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->tiles, 1);
  EXPECT_EQ(o->master_port, 29501);
  EXPECT_FALSE(dp::resolve_options({}, {}, false).has_value());
  EXPECT_TRUE(dp::resolve_options({}, {}, true).has_value());
}

}  // namespace
