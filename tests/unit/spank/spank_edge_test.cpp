// The plugin's edge pieces that need no running Slurm: host list expansion
// through libslurm, option variable names, port leases, the daemon launcher.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "daemon_launcher.hpp"
#include "host_list.hpp"
#include "job_options.hpp"
#include "port_lease.hpp"

namespace fs = std::filesystem;

namespace {

TEST(HostList, SlurmExpandsRangesPaddingAndDashes) {
  auto hosts = dp::spank::expand_host_list("gpu-a[001-003,010],login2");
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  EXPECT_EQ(*hosts, (std::vector<std::string>{"gpu-a001", "gpu-a002", "gpu-a003", "gpu-a010",
                                              "login2"}));
  auto two = dp::spank::expand_host_list("n[1-2],gpu[01-04,07]");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 7u);
  EXPECT_EQ(two->back(), "gpu07");
  EXPECT_FALSE(dp::spank::expand_host_list("").ok());
}

TEST(JobOptions, EnvironmentNamesFollowSlurm) {
  EXPECT_EQ(dp::spank::option_env_name("dp-world"), "_SLURM_SPANK_OPTION_dp_dp_world");
  EXPECT_EQ(dp::spank::option_env_name("dp-master-port"), "_SLURM_SPANK_OPTION_dp_dp_master_port");
}

TEST(JobOptions, SbatchValuesAreReadAndChecked) {
  setenv("SLURM_SPANK__SLURM_SPANK_OPTION_dp_dp_tiles", "4", 1);
  setenv("_SLURM_SPANK_OPTION_dp_dp_explain", "", 1);
  auto o = dp::spank::options_from_environment();
  unsetenv("_SLURM_SPANK_OPTION_dp_dp_explain");
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->tiles, 4);
  EXPECT_TRUE(o->explain.value_or(false));
  EXPECT_FALSE(o->world.has_value());
  setenv("SLURM_SPANK__SLURM_SPANK_OPTION_dp_dp_tiles", "x", 1);
  auto bad = dp::spank::options_from_environment();
  unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_dp_dp_tiles");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sbatch/salloc"), std::string::npos);
}

class LeaseDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dp-lease-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    site_.lease_dir = dir_ + "/ports";
    // A range no one else on this machine uses in tests.
    site_.port_min = 38710;
    site_.port_max = 38713;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  dp::SiteConfig site_;
};

TEST_F(LeaseDir, TwoLeasesNeverShareAPortAndReleaseFreesIt) {
  auto a = dp::spank::lease_master_port(site_, 0, "1.0");
  auto b = dp::spank::lease_master_port(site_, 0, "2.0");
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NE(a->port, b->port);
  EXPECT_TRUE(fs::exists(a->path));
  dp::spank::release_port_lease(a->path);
  EXPECT_FALSE(fs::exists(a->path));
  auto c = dp::spank::lease_master_port(site_, 0, "3.0");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, a->port);
}

TEST_F(LeaseDir, StaleLeaseOfDeadProcessIsReclaimed) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  fs::create_directories(site_.lease_dir);
  for (int p = site_.port_min; p <= site_.port_max; ++p)
    std::ofstream(site_.lease_dir + "/" + std::to_string(p)) << child << " 1 9.9\n";
  auto l = dp::spank::lease_master_port(site_, 0, "1.0");
  ASSERT_TRUE(l.ok()) << l.error().message;
}

TEST_F(LeaseDir, LiveLeasesAreRespected) {
  fs::create_directories(site_.lease_dir);
  auto a = dp::spank::lease_master_port(site_, 0, "1.0");
  ASSERT_TRUE(a.ok());
  std::set<int> ports{a->port};
  for (int i = 0; i < 3; ++i) {
    auto l = dp::spank::lease_master_port(site_, 0, "x");
    ASSERT_TRUE(l.ok());
    EXPECT_TRUE(ports.insert(l->port).second);
  }
  auto none = dp::spank::lease_master_port(site_, 0, "y");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no free MASTER_PORT"), std::string::npos);
}

TEST_F(LeaseDir, PortInUseIsSkipped) {
  // Another program listens on the first port of the range.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(site_.port_min));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  EXPECT_FALSE(dp::spank::port_binds(site_.port_min));
  auto l = dp::spank::lease_master_port(site_, 0, "1.0");
  close(fd);
  ASSERT_TRUE(l.ok());
  EXPECT_NE(l->port, site_.port_min);
}

class FakeDaemon : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dp-daemon-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string script(const std::string& body) {
    std::string path = dir_ + "/daemon.sh";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  std::string dir_;
};

TEST_F(FakeDaemon, SecretGoesThroughStdinAndPortComesBack) {
  dp::spank::DaemonRequest req;
  req.path = script("read s; read a; echo \"$s\" > " + dir_ + "/secret; echo \"$a\" > " + dir_ +
                    "/listen; echo \"$@\" > " + dir_ + "/args; echo READY 4242; exec sleep 30");
  req.world_size = 4;
  req.job_id = 7;
  req.step_id = 1;
  auto secret = dp::spank::make_secret();
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(secret->size(), 64u);
  EXPECT_EQ(secret->find_first_not_of("0123456789abcdef"), std::string::npos);
  auto d = dp::spank::launch_daemon(req, *secret, "fd00::7");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->port, 4242);
  std::string got, args, listen;
  std::getline(std::ifstream(dir_ + "/secret"), got);
  std::getline(std::ifstream(dir_ + "/args"), args);
  std::getline(std::ifstream(dir_ + "/listen"), listen);
  EXPECT_EQ(got, *secret);
  EXPECT_EQ(args, "--world-size 4 --job-id 7 --step-id 1 --listen -");
  EXPECT_EQ(listen, "fd00::7") << "the address to listen on follows the secret on stdin";
  EXPECT_EQ(args.find(*secret), std::string::npos) << "secret must never be in argv";
  dp::spank::stop_daemon(d->pid);
  EXPECT_NE(kill(d->pid, 0), 0) << "stopped and reaped";
}

TEST_F(FakeDaemon, ErrorLineIsReported) {
  dp::spank::DaemonRequest req;
  req.path = script("read s; echo 'ERROR cannot bind'; exit 1");
  auto d = dp::spank::launch_daemon(req, "ab", "127.0.0.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("cannot bind"), std::string::npos) << d.error().message;
}

TEST_F(FakeDaemon, SilentDaemonTimesOutAndIsKilled) {
  dp::spank::DaemonRequest req;
  req.path = script("echo $$ > " + dir_ + "/pid; exec sleep 30");
  req.ready_timeout_ms = 300;
  auto d = dp::spank::launch_daemon(req, "ab", "127.0.0.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("no answer"), std::string::npos) << d.error().message;
  long pid = 0;
  std::ifstream(dir_ + "/pid") >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_NE(kill(static_cast<pid_t>(pid), 0), 0) << "the silent daemon must be gone";
}

TEST_F(FakeDaemon, MissingBinaryNamesTheSetting) {
  dp::spank::DaemonRequest req;
  req.path = dir_ + "/nope";
  auto d = dp::spank::launch_daemon(req, "ab", "127.0.0.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("daemon="), std::string::npos);
}

}  // namespace
