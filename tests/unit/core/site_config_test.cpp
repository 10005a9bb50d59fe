// Site settings from the plugstack.conf line: strict, errors name the word.
#include "dp/site_config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace {

TEST(SiteConfig, DefaultsWhenEmpty) {
  auto c = dp::parse_site_config({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, dp::AcceleratorKind::cuda);
  EXPECT_EQ(c->tiles_per_device, 1);
  EXPECT_FALSE(c->default_on);
  EXPECT_LE(c->port_min, c->port_max);
}

TEST(SiteConfig, ParsesEveryKey) {
  auto c = dp::parse_site_config({"kind=rdu", "devices_per_node=8", "tiles_per_device=8",
                                  "ports=20000-20099", "default=on", "daemon=/opt/dp/bin/d",
                                  "lease_dir=/var/run/x", "port_wait=5", "resv_ports=ignore",
                                  "hang_timeout=10", "report=/var/log/dp/%j.%s.json",
                                  "heartbeat_timeout=120", "on_failure=keep", "kill_grace=3",
                                  "port_fallback=os", "straggler=off", "straggler_threshold=25"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->kind, dp::AcceleratorKind::rdu);
  EXPECT_EQ(c->declared_tiles_per_node(), 64);
  EXPECT_EQ(c->port_min, 20000);
  EXPECT_EQ(c->port_max, 20099);
  EXPECT_TRUE(c->default_on);
  EXPECT_EQ(c->daemon_path, "/opt/dp/bin/d");
  EXPECT_EQ(c->lease_dir, "/var/run/x");
  EXPECT_EQ(c->port_wait_s, 5);
  EXPECT_FALSE(c->use_resv_ports);
  EXPECT_EQ(c->hang_timeout_s, 10);
  EXPECT_EQ(c->report, "/var/log/dp/%j.%s.json");
  EXPECT_EQ(c->heartbeat_timeout_s, 120);
  EXPECT_EQ(c->on_failure, dp::OnFailure::keep);
  EXPECT_EQ(c->kill_grace_s, 3);
  EXPECT_TRUE(c->port_fallback_os);
  EXPECT_FALSE(c->straggler_on);
  EXPECT_EQ(c->straggler_pct, 25);
  auto fresh = dp::parse_site_config({});
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->port_fallback_os) << "off by default";
}

TEST(SiteConfig, LaterWordWins) {
  auto c = dp::parse_site_config({"kind=ze", "kind=none"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, dp::AcceleratorKind::none);
}

class BadSite : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(BadSite, NamesTheWord) {
  auto [word, why] = GetParam();
  auto c = dp::parse_site_config({"kind=cuda", word});
  ASSERT_FALSE(c.ok()) << word;
  EXPECT_EQ(c.error().code, dp::Errc::invalid_argument);
  EXPECT_NE(c.error().message.find(word), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find(why), std::string::npos) << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSite,
    ::testing::Values(
        std::pair{"colour=blue", "unknown key"}, std::pair{"kind=tpu", "kind must be"},
        std::pair{"kind", "expected key=value"}, std::pair{"=cuda", "expected key=value"},
        std::pair{"devices_per_node=-1", "negative"},
        std::pair{"devices_per_node=8x", "unexpected 'x'"}, std::pair{"tiles_per_device=0", "zero"},
        std::pair{"ports=30000", "LOW-HIGH"}, std::pair{"ports=30000-20000", "low end is above"},
        std::pair{"ports=80-90", "out of range"}, std::pair{"ports=20000-99999", "out of range"},
        std::pair{"default=yes", "on or off"}, std::pair{"daemon=relative/path", "absolute path"},
        std::pair{"port_wait=soon", "not a whole number"},
        std::pair{"heartbeat_timeout=-1", "heartbeat_timeout"}, std::pair{"port_wait=0", "zero"},
        std::pair{"resv_ports=maybe", "use or ignore"}, std::pair{"hang_timeout=-1", "negative"},
        std::pair{"hang_timeout=100000", "out of range"}, std::pair{"straggler=on", "name or off"},
        std::pair{"straggler_threshold=0", "zero"},
        std::pair{"straggler_threshold=95", "out of range"},
        std::pair{"report=step.json", "absolute path"}));

TEST(SiteConfig, EveryListedKeyIsParsed) {
  // An empty value is wrong for every key, so the error shows which part of
  // the parser handled it: never the unknown-key or missing-branch path.
  for (const auto& k : dp::site_keys()) {
    auto c = dp::parse_site_config({k.key + "="});
    ASSERT_FALSE(c.ok()) << k.key;
    EXPECT_EQ(c.error().message.find("unknown key"), std::string::npos) << c.error().message;
    EXPECT_EQ(c.error().message.find("bug"), std::string::npos) << c.error().message;
  }
  auto unknown = dp::parse_site_config({"colour=blue"});
  ASSERT_FALSE(unknown.ok());
  for (const auto& k : dp::site_keys())
    EXPECT_NE(unknown.error().message.find(k.key), std::string::npos) << unknown.error().message;
}

// SiteConfig's fields, as one comparable value (gtest prints each of a mismatch).
auto fields(const dp::SiteConfig& c) {
  return std::tie(c.kind, c.devices_per_node, c.tiles_per_device, c.port_min, c.port_max,
                  c.default_on, c.daemon_path, c.lease_dir, c.heartbeat_timeout_s, c.port_wait_s,
                  c.use_resv_ports, c.hang_timeout_s, c.report, c.kill_grace_s, c.on_failure,
                  c.port_fallback_os, c.straggler_on, c.straggler_pct);
}

TEST(SiteConfig, DefaultsAreTheTablesAndEachIsAValidWord) {
  std::vector<std::string> defaults;
  for (const auto& k : dp::site_keys()) {
    if (k.def.empty()) continue;  // unset
    auto one = dp::parse_site_config({k.key + "=" + k.def});
    EXPECT_TRUE(one.ok()) << k.key << "=" << k.def << ": " << one.error().message;
    defaults.push_back(k.key + "=" + k.def);
  }
  auto all = dp::parse_site_config(defaults);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const dp::SiteConfig fresh;
  EXPECT_EQ(fields(fresh), fields(*all));
  EXPECT_EQ(fresh.kind, dp::AcceleratorKind::cuda);
  EXPECT_EQ(fresh.port_min, 29400);
  EXPECT_EQ(fresh.port_max, 29999);
  EXPECT_EQ(fresh.lease_dir, "/run/slurm-dp/ports");
  EXPECT_TRUE(fresh.use_resv_ports);
  EXPECT_EQ(fresh.hang_timeout_s, 120);
  EXPECT_EQ(fresh.on_failure, dp::OnFailure::end);  // a failed step ends everywhere
  EXPECT_EQ(fresh.kill_grace_s, 10);
  EXPECT_TRUE(fresh.straggler_on);  // named by default: its cost allows it (bench/straggler)
  EXPECT_EQ(fresh.straggler_pct, 10);
}

TEST(SiteConfig, EachKeyShowsTheValuesItTakes) {
  std::map<std::string, std::string> values;
  for (const auto& k : dp::site_keys()) {
    EXPECT_FALSE(k.meaning.empty()) << k.key;
    values[k.key] = k.values;
  }
  EXPECT_EQ(values["kind"], "cuda|ze|rdu|none");
  EXPECT_EQ(values["port_wait"], "1..3600");
  EXPECT_EQ(values["ports"], "LOW-HIGH");
  EXPECT_EQ(values["report"], "/PATH");
  // A number's range is the one the parser enforces.
  EXPECT_TRUE(dp::parse_site_config({"port_wait=3600"}).ok());
  EXPECT_FALSE(dp::parse_site_config({"port_wait=3601"}).ok());
}

TEST(SiteConfig, ARemovedKeyIsIgnoredWithAWarningNamingIt) {
  // A plugin line of an earlier release must not stop every srun.
  auto c = dp::parse_site_config({"idle_timeout=600", "port_wait=5"});
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->port_wait_s, 5);
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("'idle_timeout=600'"), std::string::npos) << c->warnings[0];
  EXPECT_NE(c->warnings[0].find("removed"), std::string::npos) << c->warnings[0];
  EXPECT_NE(c->warnings[0].find("delete it"), std::string::npos) << c->warnings[0];
  EXPECT_TRUE(dp::parse_site_config({"port_wait=5"})->warnings.empty());
  for (const auto& k : dp::site_keys())
    EXPECT_NE(k.key, "idle_timeout") << "a removed key is not a key";
  EXPECT_EQ(dp::removed_site_keys(), std::vector<std::string>{"idle_timeout"});
}

TEST(SiteConfig, CudaHasOneTilePerDevice) {
  auto c = dp::parse_site_config({"kind=cuda", "tiles_per_device=2"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("tiles_per_device=2"), std::string::npos);
}

}  // namespace
