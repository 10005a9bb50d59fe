// The launch contract of dp-rendezvousd: READY/ERROR on stdout, secret on
// stdin only, exit on SIGTERM, after the idle time and when its parent dies.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon_process.hpp"

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
      {{"--world-size", "x", "--job-id", "1", "--step-id", "0"}, "--world-size: expected an integer"},
      {{"--world-size", "2", "--job-id", "1", "--step-id", "0", "--bogus", "1"}, "unknown option --bogus"},
      {{"--world-size", "2", "--job-id", "1", "--step-id", "0", "--listen", "not-an-ip"}, "--listen not-an-ip"},
  };
  for (const auto& c : cases) {
    auto [status, line] = run_daemon_once(c.args, secret);
    EXPECT_EQ(line.rfind("ERROR ", 0), 0u) << line;
    EXPECT_NE(line.find(c.expect), std::string::npos) << line;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  }
}

TEST(DaemonCli, RejectsAShortOrNonHexSecret) {
  const std::vector<std::string> args = {"--world-size", "1", "--job-id", "1", "--step-id", "0"};
  for (const std::string& bad : std::vector<std::string>{"abc\n", "", std::string(64, 'z') + "\n"}) {
    auto [status, line] = run_daemon_once(args, bad);
    EXPECT_EQ(line.rfind("ERROR secret on stdin", 0), 0u) << line;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
    EXPECT_EQ(line.find("zzzz"), std::string::npos) << "the secret must not be echoed";
  }
}

TEST(DaemonCli, ExitsAfterTheIdleTime) {
  DaemonProcess d(1, {"--idle-timeout", "1"});
  ASSERT_TRUE(d.ready());
  auto st = d.wait_exit(milliseconds(5'000));
  ASSERT_TRUE(st.has_value()) << "still running after 5 s with --idle-timeout 1";
  EXPECT_NE(d.log().find("idle timeout"), std::string::npos);
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
