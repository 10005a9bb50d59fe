// The plugin's edge pieces that need no running Slurm: host list expansion
// through libslurm, option variable names, port leases, the daemon launcher.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "daemon_launcher.hpp"
#include "host_list.hpp"
#include "job_options.hpp"
#include "loopback.hpp"
#include "master_socket.hpp"
#include "port_lease.hpp"
#include "process_group.hpp"
#include "rendezvous_client.hpp"
#include "spawn.hpp"
#include "user_child.hpp"

namespace fs = std::filesystem;

namespace {

TEST(HostList, SlurmExpandsRangesPaddingAndDashes) {
  auto hosts = dp::spank::expand_host_list("gpu-a[001-003,010],login2");
  ASSERT_TRUE(hosts.ok()) << hosts.error().message;
  EXPECT_EQ(*hosts,
            (std::vector<std::string>{"gpu-a001", "gpu-a002", "gpu-a003", "gpu-a010", "login2"}));
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
    ASSERT_FALSE(dir_.empty()) << "no temporary folder";
    site_.lease_dir = dir_ + "/ports";
    // Four ports of this test's own, below Linux's ephemeral range (32768+,
    // where any outgoing connection may take a port) and below the e2e
    // clusters' (17000+): tests run in parallel and each binds its range, so
    // the range follows the test's line, which no two tests share.
    const int line = ::testing::UnitTest::GetInstance()->current_test_info()->line();
    site_.port_min = 12000 + (line % 1000) * 4;
    site_.port_max = site_.port_min + 3;
  }
  dp::test::TempDir tmp_;  // removed with the fixture
  const std::string dir_ = tmp_.path();
  dp::SiteConfig site_;
};

dp::spank::LeaseRequest request(const std::string& tag, uid_t owner = 0, int dp_port_count = 0) {
  dp::spank::LeaseRequest r;
  r.tag = tag;
  r.owner = owner;
  r.dp_port_count = dp_port_count;
  return r;
}

TEST_F(LeaseDir, TwoLeasesNeverShareAPortAndReleaseFreesIt) {
  auto a = dp::spank::lease_master_port(site_, request("1.0"));
  auto b = dp::spank::lease_master_port(site_, request("2.0"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NE(a->port(), b->port());
  const std::string path = site_.lease_dir + "/" + std::to_string(a->port());
  EXPECT_TRUE(fs::exists(path));
  const int port = a->port();
  a->release();
  EXPECT_FALSE(fs::exists(path));
  auto c = dp::spank::lease_master_port(site_, request("3.0"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port(), port);
}

// --dp-ports: a step's ports are leased all or none.
TEST_F(LeaseDir, AStepsPortsAreLeasedTogetherAllOrNone) {
  auto three = dp::spank::lease_ports(site_, request("1.0", 0, 2));
  ASSERT_TRUE(three.ok()) << three.error().message;
  ASSERT_EQ(three->size(), 3u);
  std::set<int> ports;
  for (const auto& l : *three) {
    EXPECT_TRUE(l.holding_port());
    ports.insert(l.port());
  }
  EXPECT_EQ(ports.size(), 3u);
  // One port of the four is left: a step that needs two gets none.
  auto two = dp::spank::lease_ports(site_, request("2.0", 0, 1));
  ASSERT_FALSE(two.ok());
  auto one = dp::spank::lease_ports(site_, request("3.0"));
  ASSERT_TRUE(one.ok()) << "the failed step's first lease was released: " << one.error().message;
  EXPECT_EQ(ports.count(one->front().port()), 0u);
}

TEST_F(LeaseDir, FolderAndFilesArePrivateToRoot) {
  // An older release left the folder 0755: it is tightened, not trusted.
  fs::create_directories(site_.lease_dir);
  chmod(site_.lease_dir.c_str(), 0755);
  auto a = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_TRUE(a.ok()) << a.error().message;
  struct stat st {};
  ASSERT_EQ(stat(site_.lease_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((site_.lease_dir + "/" + std::to_string(a->port())).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((site_.lease_dir + "/.lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(LeaseDir, SymlinkOtherOwnerOrWritableParentIsRefused) {
  fs::create_directories(dir_ + "/elsewhere");
  fs::create_directory_symlink(dir_ + "/elsewhere", site_.lease_dir);
  auto linked = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message.find("symlink"), std::string::npos) << linked.error().message;
  EXPECT_NE(linked.error().message.find("lease_dir="), std::string::npos);

  site_.lease_dir = dir_ + "/elsewhere";
  ASSERT_EQ(chown(site_.lease_dir.c_str(), 65534, 65534), 0);
  auto foreign = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("owned by uid 65534"), std::string::npos)
      << foreign.error().message;

  fs::create_directories(dir_ + "/open");
  chmod((dir_ + "/open").c_str(), 0777);  // not sticky: anyone may swap what is inside
  site_.lease_dir = dir_ + "/open/ports";
  auto open = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("other users"), std::string::npos) << open.error().message;
  EXPECT_FALSE(fs::exists(site_.lease_dir)) << "nothing is created under an unsafe parent";
}

TEST_F(LeaseDir, HeldLockFailsWithinItsBoundNamingTheLock) {
  auto first = dp::spank::lease_master_port(site_, request("1.0"));  // creates folder and lock
  ASSERT_TRUE(first.ok());
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = fork();
  if (holder == 0) {
    int fd = open((site_.lease_dir + "/.lock").c_str(), O_RDONLY);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto req = request("2.0");
  req.lock_wait = std::chrono::milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  auto blocked = dp::spank::lease_master_port(site_, req);
  const auto took = std::chrono::steady_clock::now() - t0;
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find(".lock"), std::string::npos) << blocked.error().message;
  EXPECT_LT(took, std::chrono::seconds(2));
  EXPECT_TRUE(dp::spank::lease_master_port(site_, req).ok())
      << "free again once the holder is gone";
}

// The share counts ports, from the lease files: one user's steps hold at
// most share_ports of the range, whatever --dp-ports asks; the refusal names
// the holder's uid, its steps and the counts.
TEST_F(LeaseDir, OneUserHoldsAtMostTheShareInPorts) {
  auto req = request("1.0", 4242);
  req.share_ports = 3;
  req.dp_port_count = 1;
  auto a = dp::spank::lease_ports(site_, req);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->size(), 2u) << "MASTER_PORT and 1 more";
  req.tag = "2.0";
  auto b = dp::spank::lease_ports(site_, req);
  ASSERT_FALSE(b.ok()) << "2 + 2 ports leased under a share of 3";
  const std::string& m = b.error().message;
  EXPECT_NE(m.find("uid 4242 already holds 2 leased ports on this node (steps 1.0 (2))"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("a user may hold 3 leased ports on a node"), std::string::npos) << m;
  EXPECT_NE(m.find("MASTER_PORT and --dp-ports=1 (2 ports)"), std::string::npos) << m;
  req.dp_port_count = 0;
  auto c = dp::spank::lease_ports(site_, req);
  ASSERT_TRUE(c.ok()) << "2 + 1 ports fit a share of 3: " << c.error().message;
  // A step that alone asks for more than the share: refused, naming the fix.
  auto big = request("3.0", 4244);
  big.share_ports = 3;
  big.dp_port_count = 3;
  auto d = dp::spank::lease_ports(site_, big);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("raise lease_share="), std::string::npos) << d.error().message;
  a->clear();  // releases each
  auto other = request("4.0", 4243);
  other.share_ports = 1;
  EXPECT_TRUE(dp::spank::lease_master_port(site_, other).ok())  // released at once
      << "another user is not affected";
  req.tag = "5.0";
  EXPECT_TRUE(dp::spank::lease_ports(site_, req).ok()) << "released leases no longer count";
}

// Every port of the range leased: the refusal counts each holder's leases
// from the files (holds do not listen: the kernel's tables cannot name them).
TEST_F(LeaseDir, AFullRangeNamesTheLeaseHoldersUids) {
  auto mine = request("1.0", 4242);
  mine.dp_port_count = 2;
  auto a = dp::spank::lease_ports(site_, mine);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto theirs = request("2.0", 4243);
  auto b = dp::spank::lease_ports(site_, theirs);
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto late = request("3.0", 4244);
  late.dp_port_count = 1;
  auto c = dp::spank::lease_ports(site_, late);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("leased: uid 4242 (3 ports), uid 4243 (1 port)"),
            std::string::npos)
      << c.error().message;
}

TEST_F(LeaseDir, TheShareCountsEachUidWhole) {
  // uids take ten digits: a lease of uid 1234567890 is not one of uid
  // 123456789's (the first nine digits), and counts for its own.
  auto big = request("1.0", 1'234'567'890u);
  big.share_ports = 1;
  auto a = dp::spank::lease_master_port(site_, big);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto nine = request("2.0", 123'456'789u);
  nine.share_ports = 1;
  EXPECT_TRUE(dp::spank::lease_master_port(site_, nine).ok()) << "another user's lease counted";
  big.tag = "3.0";
  auto again = dp::spank::lease_master_port(site_, big);
  ASSERT_FALSE(again.ok()) << "the share missed uid 1234567890's own lease";
  EXPECT_NE(again.error().message.find("uid 1234567890"), std::string::npos)
      << again.error().message;
}

// A range (4 ports) too small for two steps' ports: the refusal names
// --dp-ports and the fix, not MASTER_PORT alone.
TEST_F(LeaseDir, ARangeTooSmallForTheStepsPortsNamesDpPorts) {
  auto req = request("1.0", 4242);
  req.dp_port_count = 2;
  auto a = dp::spank::lease_ports(site_, req);
  ASSERT_TRUE(a.ok()) << a.error().message;
  req.tag = "2.0";
  auto b = dp::spank::lease_ports(site_, req);
  ASSERT_FALSE(b.ok());
  const std::string& m = b.error().message;
  EXPECT_NE(m.find("MASTER_PORT and --dp-ports=2 (3 ports)"), std::string::npos) << m;
  EXPECT_NE(m.find("ask for fewer with --dp-ports=N"), std::string::npos) << m;
  EXPECT_EQ(m.find("--dp-master-port"), std::string::npos) << "it covers none of DP_PORTS: " << m;
  req.master_fixed = true;
  EXPECT_EQ(dp::spank::lease_need_text(req), "--dp-ports=2 (2 ports)");
}

TEST_F(LeaseDir, LeasedPortIsHeldUntilDropped) {
  auto a = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->holding_port());
  // Another program binding the way servers do (SO_REUSEADDR) is kept out.
  EXPECT_FALSE(dp::spank::port_binds(a->port()));
  a->drop_hold();
  EXPECT_TRUE(dp::spank::port_binds(a->port()));
  EXPECT_TRUE(fs::exists(site_.lease_dir + "/" + std::to_string(a->port())))
      << "the lease outlives the hold";
}

// --dp-master-socket=pass: what rank 0's task gets is the held port itself,
// listening and kept across exec; a port someone else holds is refused.
TEST_F(LeaseDir, PassedMasterSocketListensOnTheHeldPort) {
  auto a = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_TRUE(a.ok());
  auto fd = dp::spank::master_listen_socket(a->hold_fd(), a->port());
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  EXPECT_EQ(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0) << "the program must inherit it";
  a->drop_hold();  // slurmstepd's copy: the task's stays
  EXPECT_FALSE(dp::spank::port_binds(a->port())) << "the passed socket still holds the port";
  int listening = 0;
  socklen_t len = sizeof listening;
  ASSERT_EQ(getsockopt(fd->get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), 0);
  EXPECT_EQ(listening, 1);
  auto taken = dp::spank::master_listen_socket(-1, a->port());
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("bound by another process"), std::string::npos)
      << taken.error().message;
  fd->reset();
  auto fresh = dp::spank::master_listen_socket(-1, a->port());  // --dp-master-port
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
}

// A port whose last connections the server closed first (their TIME_WAITs
// keep out every binder without SO_REUSEADDR for a minute, as an earlier
// step's on a --dp-master-port may): the hold binds it with the option and
// clears it, and listen checks the port's owners again: rank 0 still gets it.
TEST(MasterSocket, APortWithConnectionsInTimeWaitIsPassedListening) {
  // As PyTorch's TCPStore and the passed socket listen: with SO_REUSEADDR,
  // which the TIME_WAITs keep (a server without it keeps everyone out).
  dp::UniqueFd server = dp::test::bound_socket(0, {.reuseaddr = true, .listening = true});
  ASSERT_TRUE(server);
  sockaddr_in6 addr{};
  socklen_t addr_len = sizeof addr;
  ASSERT_EQ(getsockname(server.get(), reinterpret_cast<sockaddr*>(&addr), &addr_len), 0);
  const int port = ntohs(addr.sin6_port);
  dp::UniqueFd client = dp::test::connect_loopback(port);
  ASSERT_TRUE(client);
  dp::UniqueFd accepted(accept(server.get(), nullptr, nullptr));
  ASSERT_TRUE(accepted);
  accepted.reset();  // the server closes first: its end goes to TIME_WAIT
  char c;
  ASSERT_EQ(read(client.get(), &c, 1), 0);
  client.reset();
  server.reset();
  ASSERT_FALSE(dp::test::bound_socket(port, {})) << "no TIME_WAIT on port " << port;
  auto fd = dp::spank::master_listen_socket(-1, port);
  ASSERT_TRUE(fd.ok()) << (fd.ok() ? "" : fd.error().message);
  int listening = 0;
  socklen_t len = sizeof listening;
  ASSERT_EQ(getsockopt(fd->get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len), 0);
  EXPECT_EQ(listening, 1);
}

// The site's policy, written once: a random start, and a quarter of the
// range's ports per user (at least 1), or the site's lease_share.
TEST(LeasePolicy, AQuarterOfTheRangePerUserAndARandomStart) {
  dp::SiteConfig site;
  site.port_min = 29400;
  site.port_max = 29999;
  auto req = dp::spank::lease_request(site, 1002, "7.0");
  EXPECT_EQ(req.share_ports, 150);
  EXPECT_EQ(req.owner, 1002u);
  EXPECT_EQ(req.tag, "7.0");
  site.port_max = 29402;
  EXPECT_EQ(dp::spank::lease_request(site, 1002, "7.0").share_ports, 1);
  site.lease_share = 10;
  EXPECT_EQ(dp::spank::lease_request(site, 1002, "7.0").share_ports, 10);
  EXPECT_NE(req.seed, dp::spank::lease_request(site, 1002, "7.0").seed);
}

TEST_F(LeaseDir, StartIsRandom) {
  std::set<uint64_t> seeds;
  for (int i = 0; i < 8; ++i) seeds.insert(dp::spank::random_seed());
  EXPECT_GT(seeds.size(), 6u);
}

TEST_F(LeaseDir, StaleLeaseOfDeadProcessIsReclaimed) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  fs::create_directories(site_.lease_dir);
  for (int p = site_.port_min; p <= site_.port_max; ++p)
    std::ofstream(site_.lease_dir + "/" + std::to_string(p)) << child << " 1 9.9\n";
  auto l = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_TRUE(l.ok()) << l.error().message;
}

TEST_F(LeaseDir, LiveLeasesAreRespected) {
  fs::create_directories(site_.lease_dir);
  auto a = dp::spank::lease_master_port(site_, request("1.0"));
  ASSERT_TRUE(a.ok());
  std::set<int> ports{a->port()};
  std::vector<dp::spank::PortLease> held;
  for (int i = 0; i < 3; ++i) {
    auto l = dp::spank::lease_master_port(site_, request("x"));
    ASSERT_TRUE(l.ok());
    EXPECT_TRUE(ports.insert(l->port()).second);
    held.push_back(std::move(*l));
  }
  auto none = dp::spank::lease_master_port(site_, request("y"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no free MASTER_PORT"), std::string::npos)
      << none.error().message;
  EXPECT_NE(none.error().message.find("--dp-master-port=PORT"), std::string::npos)
      << none.error().message;
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
  auto l = dp::spank::lease_master_port(site_, request("1.0"));
  close(fd);
  ASSERT_TRUE(l.ok());
  EXPECT_NE(l->port(), site_.port_min);
}

// The agent launcher's composition: spawn_piped, become_user in the child,
// read_answer in root. `work(fd)` writes the child's answer to fd.
template <class Work>
dp::Result<std::string> answer_of_user_child(std::chrono::milliseconds allowed, Work&& work) {
  auto child = dp::spank::spawn_piped([&](int in_fd, int out_fd, pid_t) {
    close(in_fd);
    if (!dp::spank::become_user({65534, 65534})) _exit(125);
    work(out_fd);
    _exit(0);
  });
  if (!child) return child.error();
  child->input.reset();
  auto got = dp::spank::read_answer(child->answer.get(), std::chrono::steady_clock::now() + allowed,
                                    allowed, "the test's child");
  child->answer.reset();
  kill(child->pid, SIGKILL);  // ours, by pid; it may have exited already
  waitpid(child->pid, nullptr, 0);
  return got;
}

void write_text(int fd, const std::string& s) { (void)!write(fd, s.data(), s.size()); }

TEST(UserChild, ChildRunsAsTheJobUserAndCannotRegainRoot) {
  auto r = answer_of_user_child(std::chrono::seconds(5), [](int fd) {
    uid_t ru, eu, su;
    getresuid(&ru, &eu, &su);
    gid_t groups[8];
    const int n = getgroups(8, groups);
    const bool root_back = setuid(0) == 0 || seteuid(0) == 0;
    write_text(fd, std::to_string(ru) + " " + std::to_string(eu) + " " + std::to_string(su) + " " +
                       std::to_string(getgid()) + " groups=" + std::to_string(n) +
                       (root_back ? " ROOT" : ""));
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "65534 65534 65534 65534 groups=1");
}

TEST(UserChild, RootReadsAtMost64KiB) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = answer_of_user_child(std::chrono::seconds(5), [](int fd) {
    const std::string big(1 << 20, 'x');  // 100 MiB in all
    for (int i = 0; i < 100; ++i)
      if (write(fd, big.data(), big.size()) < 0) break;
  });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("more than 65536 bytes"), std::string::npos)
      << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST(UserChild, RootStopsWaitingForASilentChildAtTheDeadline) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = answer_of_user_child(std::chrono::milliseconds(300), [](int) { pause(); });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, dp::Errc::timeout);
  EXPECT_NE(r.error().message.find("within 300 ms"), std::string::npos) << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

// What the node agent's client does against a hostile "daemon" that answers
// with a 100 MiB frame: it refuses the frame from its header.
TEST(UserChild, ClientRefusesAnOversizedReply) {
  sockaddr_in a{};
  dp::UniqueFd listener = dp::test::listen_loopback(a);
  ASSERT_TRUE(listener) << "cannot listen on 127.0.0.1";
  const int srv = listener.get();
  size_t sent = 0;
  std::thread fake([&] {
    const int c = accept(srv, nullptr, nullptr);
    if (c < 0) return;
    const uint32_t header = htonl(100u << 20);
    (void)!write(c, &header, sizeof header);
    std::string chunk(65536, '\0');
    while (sent < (100u << 20)) {
      const ssize_t n = send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    close(c);
  });
  const uint16_t port = ntohs(a.sin_port);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = answer_of_user_child(std::chrono::seconds(10), [&](int fd) {
    dp::ClientOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    o.secret = "00";
    o.role = dp::PeerRole::agent;
    o.connect_timeout = std::chrono::seconds(2);
    o.max_reply_frame = 4096;
    auto c = dp::RendezvousClient::connect(o);
    write_text(fd, c ? std::string("connected") : c.error().message);
  });
  fake.join();
  listener.reset();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(r->find("oversized"), std::string::npos) << *r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_LT(sent, 100u << 20) << "the client stopped reading long before the frame's end";
}

class FakeDaemon : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()) << "no temporary folder"; }
  std::string script(const std::string& body) {
    std::string path = dir_ + "/daemon.sh";
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  dp::test::TempDir tmp_;  // removed with the fixture
  const std::string dir_ = tmp_.path();
};

TEST_F(FakeDaemon, SecretGoesThroughStdinAndPortComesBack) {
  dp::spank::DaemonLaunch req;
  req.path = script("read s; read a; read n; echo \"$s\" > " + dir_ + "/secret; echo \"$a\" > " +
                    dir_ + "/listen; echo \"$n\" > " + dir_ + "/nodes; echo \"$@\" > " + dir_ +
                    "/args; echo READY 4242; exec sleep 30");
  req.args = dp::daemon::LaunchArgs{4, "7", "1"};
  auto secret = dp::spank::make_secret();
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ(secret->size(), 64u);
  EXPECT_EQ(secret->find_first_not_of("0123456789abcdef"), std::string::npos);
  auto d = dp::spank::launch_daemon(req, *secret, "fd00::7", {"10.0.0.1", "fd00::2"});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->port, 4242);
  std::string got, args, listen, nodes;
  std::getline(std::ifstream(dir_ + "/nodes"), nodes);
  EXPECT_EQ(nodes, "10.0.0.1 fd00::2") << "the step's node addresses follow on stdin";
  std::getline(std::ifstream(dir_ + "/secret"), got);
  std::getline(std::ifstream(dir_ + "/args"), args);
  std::getline(std::ifstream(dir_ + "/listen"), listen);
  EXPECT_EQ(got, *secret);
  EXPECT_EQ(args, "--world-size 4 --job-id 7 --step-id 1 --listen - --step-nodes - --notice-fd 3")
      << "srun's stderr is the daemon's descriptor 3, for the notices";
  EXPECT_EQ(listen, "fd00::7") << "the address to listen on follows the secret on stdin";
  EXPECT_EQ(args.find(*secret), std::string::npos) << "secret must never be in argv";
  dp::spank::stop_daemon(d->pid);
  EXPECT_NE(kill(d->pid, 0), 0) << "stopped and reaped";
}

TEST_F(FakeDaemon, ErrorLineIsReported) {
  dp::spank::DaemonLaunch req;
  req.path = script("read s; echo 'ERROR cannot bind'; exit 1");
  auto d = dp::spank::launch_daemon(req, "ab", "127.0.0.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("cannot bind"), std::string::npos) << d.error().message;
}

TEST_F(FakeDaemon, SilentDaemonTimesOutAndIsKilled) {
  dp::spank::DaemonLaunch req;
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
  dp::spank::DaemonLaunch req;
  req.path = dir_ + "/nope";
  auto d = dp::spank::launch_daemon(req, "ab", "127.0.0.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("daemon="), std::string::npos);
}

}  // namespace
