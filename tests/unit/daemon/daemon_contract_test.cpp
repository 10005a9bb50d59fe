// srun's and the daemon's one contract (daemon/daemon_contract.hpp): what
// srun writes, the daemon's own parser reads back as meant; the answer line
// round-trips, and a bad or hostile line is refused, never half-read.
#include "daemon_contract.hpp"

#include <gtest/gtest.h>

#include "options.hpp"

namespace dp::daemon {
namespace {

TEST(DaemonContract, TheArgumentsSrunWritesAreTheOnesTheDaemonReads) {
  LaunchArgs a;
  a.world_size = 8;
  a.job_id = "41";
  a.step_id = "3";
  a.nodes = 2;
  a.heartbeat_timeout_ms = 30'000;
  a.hang_timeout_ms = 0;
  a.hang_timeout_by_user = true;
  a.on_failure = OnFailure::keep;
  a.listen_ports = ListenRange{61000, 61099, "SrunPortRange"};
  auto o = parse_options(format_arguments(a));
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->world_size, 8);
  EXPECT_EQ(o->job_id, "41");
  EXPECT_EQ(o->step_id, "3");
  EXPECT_EQ(o->listen_addr, "-");
  EXPECT_EQ(o->step_nodes, "-");
  EXPECT_EQ(o->limits.nodes, 2);
  EXPECT_EQ(o->limits.heartbeat_timeout, std::chrono::milliseconds(30'000));
  EXPECT_EQ(o->limits.hang_timeout, std::chrono::milliseconds(0));
  EXPECT_TRUE(o->limits.hang_timeout_by_user);
  EXPECT_EQ(o->limits.on_failure, OnFailure::keep);
  EXPECT_EQ(o->listen_ports.text(), "SrunPortRange=61000-61099");
  // Unset values are left to the daemon's defaults.
  LaunchArgs plain{4, "1", "0"};
  plain.listen = "127.0.0.1";
  plain.step_nodes_on_stdin = false;
  auto d = parse_options(format_arguments(plain));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->listen_addr, "127.0.0.1");
  EXPECT_TRUE(d->step_nodes.empty());
  EXPECT_EQ(d->limits.hang_timeout, BrokerLimits{}.hang_timeout);
  EXPECT_FALSE(d->limits.hang_timeout_by_user);
  EXPECT_EQ(d->limits.on_failure, OnFailure::end);
  // The daemon's defaults are the site's (one table, dp/site_config.hpp).
  EXPECT_EQ(BrokerLimits{}.hang_timeout, std::chrono::seconds(site_defaults().hang_timeout_s));
  EXPECT_EQ(BrokerLimits{}.heartbeat_timeout,
            std::chrono::seconds(site_defaults().heartbeat_timeout_s));
  EXPECT_TRUE(d->listen_ports.any());
  EXPECT_EQ(format_addresses("10.0.0.1", {"10.0.0.1", "10.0.0.2"}),
            "10.0.0.1\n10.0.0.1 10.0.0.2 \n");
}

TEST(DaemonContract, TheAnswerRoundTripsAndNamesTheReportSocket) {
  const std::string ready =
      format_answer(DaemonAnswer{40123, "@slurm-dp-1000/7.0.a1b2c3d4.sock.00ff"});
  EXPECT_EQ(ready, "READY 40123 @slurm-dp-1000/7.0.a1b2c3d4.sock.00ff\n");
  auto a = parse_answer(ready.substr(0, ready.size() - 1));
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->port, 40123);
  EXPECT_EQ(a->report_socket, "@slurm-dp-1000/7.0.a1b2c3d4.sock.00ff");
  auto bare = parse_answer("READY 9");  // a daemon without an abstract socket
  ASSERT_TRUE(bare);
  EXPECT_TRUE(bare->report_socket.empty());
  const std::string error = format_answer(make_error(Errc::limit, "fd limit 1024\ntoo low"));
  EXPECT_EQ(error, "ERROR fd limit 1024 too low\n");
  auto e = parse_answer(error.substr(0, error.size() - 1));
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().code, Errc::unavailable);
  EXPECT_EQ(e.error().message, "fd limit 1024 too low");
}

TEST(DaemonContract, ABadAnswerIsRefusedWhole) {
  for (const char* line : {"", "READY", "READY 0", "READY 70000", "READY 12x", "HELLO 1",
                           "READY 1 /tmp/path", "READY 1 @a b", "READY 1 @\x01", "READY 1 @"})
    EXPECT_FALSE(parse_answer(line)) << line;
  EXPECT_FALSE(parse_answer("READY 1 @" + std::string(200, 'a')));
  auto bad = parse_answer("nonsense from a broken daemon");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::protocol);
  EXPECT_NE(bad.error().message.find("nonsense"), std::string::npos);
}

}  // namespace
}  // namespace dp::daemon
