// Where dp-rendezvousd listens on srun's host: the site's daemon_ports, else
// Slurm's SrunPortRange, else any port; each port of a range tried once.
#include "dp/daemon_ports.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

TEST(DaemonPorts, TheSitesRangeWinsOverSlurmsAndNoneMeansAnyPort) {
  dp::SiteConfig site;
  EXPECT_TRUE(dp::daemon_listen_range(site, 0, 0).any());
  EXPECT_EQ(dp::daemon_listen_range(site, 0, 0).text(), "any port");
  auto srun = dp::daemon_listen_range(site, 61000, 61099);
  EXPECT_EQ(srun.text(), "SrunPortRange=61000-61099");
  EXPECT_EQ(srun.size(), 100);
  auto parsed = dp::parse_site_config({"daemon_ports=62000-62009"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(dp::daemon_listen_range(*parsed, 61000, 61099).text(), "daemon_ports=62000-62009");
  EXPECT_FALSE(dp::parse_site_config({"daemon_ports=62009-62000"}).ok());
  auto bad = dp::parse_site_config({"daemon_ports=62000"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("daemon_ports=61000-61099"), std::string::npos)
      << bad.error().message;
}

TEST(DaemonPorts, EveryPortOfTheRangeIsTriedOnceFromAnyStart) {
  const dp::ListenRange r{61000, 61004, "SrunPortRange"};
  for (uint32_t start : {0u, 3u, 4u, 4294967295u}) {
    std::set<int> seen;
    for (int i = 0; i < r.size(); ++i) seen.insert(dp::nth_listen_port(r, start, i));
    EXPECT_EQ(seen.size(), 5u) << start;
    EXPECT_EQ(*seen.begin(), 61000);
    EXPECT_EQ(*seen.rbegin(), 61004);
  }
}

TEST(DaemonPorts, AFullRangeNamesItsSettingAndTheFix) {
  const auto srun = dp::listen_range_full({61000, 61099, "SrunPortRange"}, "10.1.0.5");
  EXPECT_EQ(srun.rfind("no free port in SrunPortRange=61000-61099 on 10.1.0.5 (all 100 in use)", 0),
            0u)
      << srun;
  EXPECT_NE(srun.find("widen SrunPortRange in slurm.conf"), std::string::npos) << srun;
  const auto site = dp::listen_range_full({62000, 62001, "daemon_ports"}, "10.1.0.5");
  EXPECT_NE(site.find("widen daemon_ports"), std::string::npos) << site;
}

}  // namespace
