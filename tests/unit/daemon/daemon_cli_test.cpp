// The launch contract of dp-rendezvousd: READY/ERROR on stdout, secret on
// stdin only, exit on SIGTERM and when its parent dies, and never on its own
// while the parent (srun) lives.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_process.hpp"
#include "dp/unique_fd.hpp"
#include "options.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;

TEST(DaemonCli, ReadyLineAndCleanExitOnSigterm) {
  DaemonProcess d(2);
  ASSERT_TRUE(d.ready()) << d.first_line();
  EXPECT_GT(d.port(), 0);
  kill(d.pid(), SIGTERM);
  auto st = d.wait_exit(milliseconds(5'000));
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  EXPECT_EQ(d.log().find(kSecret), std::string::npos);
}

TEST(DaemonCli, BadArgumentsGiveOneErrorLine) {
  const std::string secret = kSecret + "\n";
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  } cases[] = {
      {{"--job-id", "1", "--step-id", "0"}, "--world-size is required"},
      {{"--world-size", "x", "--job-id", "1", "--step-id", "0"},
       "--world-size: expected an integer"},
      {{"--world-size", "2", "--job-id", "1", "--step-id", "0", "--bogus", "1"},
       "unknown option --bogus"},
      // Removed: the daemon lives exactly as long as srun, and no plugin passes it.
      {{"--world-size", "2", "--job-id", "1", "--step-id", "0", "--idle-timeout", "1"},
       "unknown option --idle-timeout"},
      {{"--world-size", "2", "--job-id", "1", "--step-id", "0", "--listen", "not-an-ip"},
       "--listen not-an-ip"},
  };
  for (const auto& c : cases) {
    auto [status, line] = run_daemon_once(c.args, secret);
    EXPECT_EQ(line.rfind("ERROR ", 0), 0u) << line;
    EXPECT_NE(line.find(c.expect), std::string::npos) << line;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  }
}

// --help's defaults are the values a fresh DaemonOptions holds, not prose.
TEST(DaemonCli, HelpShowsTheDefaultsTheOptionsHold) {
  const std::string help = daemon::usage_text();
  const daemon::BrokerLimits limits;
  for (const std::string& want :
       {"(default " + std::to_string(limits.max_key_bytes) + ")",
        "(default " + std::to_string(limits.max_total_bytes) + ")",
        "(default " + std::to_string(limits.hello_timeout.count()) + ")",
        "(default " + std::to_string(limits.heartbeat_timeout.count()) + ", 0: off)",
        "(default " + daemon::DaemonOptions{}.listen_addr + ")",
        std::string("(default: ranks connect directly)")}) {
    EXPECT_NE(help.find(want), std::string::npos) << want << " not in:\n" << help;
  }
  EXPECT_EQ(help.find("idle"), std::string::npos) << help;
  for (size_t a = 0, b; a < help.size(); a = b + 1) {
    b = help.find('\n', a);
    EXPECT_LE(b - a, 100u) << help.substr(a, b - a);
  }
}

TEST(DaemonCli, RejectsAShortOrNonHexSecret) {
  const std::vector<std::string> args = {"--world-size", "1", "--job-id", "1", "--step-id", "0"};
  for (const std::string& bad :
       std::vector<std::string>{"abc\n", "", std::string(64, 'z') + "\n"}) {
    auto [status, line] = run_daemon_once(args, bad);
    EXPECT_EQ(line.rfind("ERROR secret on stdin", 0), 0u) << line;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    EXPECT_EQ(line.find("zzzz"), std::string::npos) << "the secret must not be echoed";
  }
}

TEST(DaemonCli, NeverLeavesOnItsOwnWhileItsParentLives) {
  DaemonProcess d(1);
  ASSERT_TRUE(d.ready()) << d.first_line();
  EXPECT_FALSE(d.wait_exit(milliseconds(3'000)).has_value())
      << "left with nobody connected: " << d.log();
  {
    auto c = RendezvousClient::connect(d.client_options(0, 1));
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE((*c)->goodbye().ok());
  }
  // Every rank said goodbye: a second dp::init() of the step may still come.
  EXPECT_FALSE(d.wait_exit(milliseconds(3'000)).has_value())
      << "left after every rank said goodbye: " << d.log();
  auto again = RendezvousClient::connect(d.client_options(0, 1));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_TRUE((*again)->set("second", "init").ok());
}

TEST(DaemonCli, ListenAddressFromTheSecondLineOfStdin) {
  DaemonProcess d(1, {"--listen", "-"}, kSecret + "\n127.0.0.1");
  ASSERT_TRUE(d.ready()) << d.first_line();
  auto c = RendezvousClient::connect(d.client_options(0, 1));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_NE(d.log().find("listening on 127.0.0.1 port"), std::string::npos) << d.log();
  auto [status, line] = run_daemon_once(
      {"--world-size", "1", "--job-id", "1", "--step-id", "0", "--listen", "-"}, kSecret + "\n");
  EXPECT_EQ(line.rfind("ERROR --listen -: no address", 0), 0u) << line;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

// A firewalled login host's range (srun's SrunPortRange or the site's
// daemon_ports): the port is one of it; all taken, the answer names it.
TEST(DaemonCli, ListensInItsRangeOrSaysTheRangeIsFull) {
  // Three ports of our own, found free by binding them.
  std::vector<UniqueFd> held;
  int low = 0;
  for (int base = 20500 + static_cast<int>(getpid() % 2000) * 3; held.size() < 3 && base < 30000;) {
    held.clear();
    for (int p = base; p < base + 3; ++p) {
      UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_port = htons(static_cast<uint16_t>(p));
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
          listen(fd.get(), 1) != 0)
        break;
      held.push_back(std::move(fd));
    }
    if (held.size() < 3) base += 3;
    else low = base;
  }
  ASSERT_EQ(held.size(), 3u) << "no 3 free loopback ports in a row";
  const std::string range = std::to_string(low) + "-" + std::to_string(low + 2);
  const std::vector<std::string> args = {
      "--world-size", "1",         "--job-id",       "1",   "--step-id",           "0",
      "--listen",     "127.0.0.1", "--listen-ports", range, "--listen-ports-from", "SrunPortRange"};
  auto [status, line] = run_daemon_once(args, kSecret + "\n");
  EXPECT_EQ(line.rfind(
                "ERROR no free port in SrunPortRange=" + range + " on 127.0.0.1 (all 3 in use)", 0),
            0u)
      << line;
  EXPECT_NE(line.find("widen SrunPortRange in slurm.conf"), std::string::npos) << line;
  EXPECT_NE(line.find("daemon_ports=LOW-HIGH"), std::string::npos) << line;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  // One port let go: the daemon takes that one.
  held.erase(held.begin() + 1);
  DaemonProcess d(
      1, {"--listen", "127.0.0.1", "--listen-ports", range, "--listen-ports-from", "daemon_ports"});
  ASSERT_TRUE(d.ready()) << d.first_line();
  EXPECT_EQ(d.port(), low + 1);
}

TEST(DaemonCli, AHardFileLimitTooLowForTheStepFailsBeforeItStarts) {
  const std::vector<std::string> args = {"--world-size", "4096", "--job-id", "1",
                                         "--step-id",    "0",    "--listen", "127.0.0.1"};
  rlimit have{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &have), 0);
  if (have.rlim_max < 4096 + 256) GTEST_SKIP() << "hard fd limit " << have.rlim_max << " < 4352";
  // A login shell's soft limit of 1 024 is raised to the hard one: no problem...
  auto [ok_status, ok_line] = run_daemon_once(args, kSecret + "\n", rlimit{1024, have.rlim_max});
  EXPECT_EQ(ok_line.rfind("READY ", 0), 0u) << ok_line;
  // ...but a hard limit below the step's size is, with the limit and the fix named.
  auto [status, line] = run_daemon_once(args, kSecret + "\n", rlimit{512, 512});
  EXPECT_EQ(line.rfind("ERROR the open-file limit (RLIMIT_NOFILE, hard limit 512)", 0), 0u) << line;
  EXPECT_NE(line.find("ulimit -Hn"), std::string::npos) << line;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

TEST(DaemonCli, ExitsWhenItsParentDies) {
  // An intermediate process starts the daemon, reports its pid, then dies.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t mid = fork();
  if (mid == 0) {
    close(p[0]);
    auto* d = new DaemonProcess(1);  // leaked on purpose: its parent vanishes
    const pid_t dp = d->ready() ? d->pid() : -1;
    [[maybe_unused]] ssize_t n = write(p[1], &dp, sizeof dp);
    _exit(0);
  }
  close(p[1]);
  pid_t daemon_pid = -1;
  ASSERT_EQ(read(p[0], &daemon_pid, sizeof daemon_pid), static_cast<ssize_t>(sizeof daemon_pid));
  close(p[0]);
  ASSERT_GT(daemon_pid, 0);
  waitpid(mid, nullptr, 0);
  // The daemon is not our child, so poll its existence.
  const bool gone = poll_until([&] { return kill(daemon_pid, 0) != 0; }, milliseconds(5'000));
  if (!gone) kill(daemon_pid, SIGKILL);
  EXPECT_TRUE(gone) << "dp-rendezvousd outlived its parent";
}

}  // namespace
}  // namespace dp::test
