// A rank that dies aborts the job: every other rank's pending and later
// calls fail with Errc::aborted naming the dead rank, well within 5 s.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "daemon_process.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A child process that connects as `rank`, signals readiness through a pipe, then idles.
pid_t start_rank_child(const DaemonProcess& d, int rank, int world) {
  int p[2];
  if (pipe(p) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    auto c = RendezvousClient::connect(d.client_options(rank, world));
    const char ok = c.ok() ? '1' : '0';
    [[maybe_unused]] ssize_t n = write(p[1], &ok, 1);
    close(p[1]);
    pause();
    _exit(0);
  }
  close(p[1]);
  char ok = 0;
  const bool ready = read(p[0], &ok, 1) == 1 && ok == '1';
  close(p[0]);
  if (!ready) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

TEST(Liveness, KilledRankAbortsEveryPendingAndLaterCall) {
  DaemonProcess d(3);
  ASSERT_TRUE(d.ready());
  auto c0 = RendezvousClient::connect(d.client_options(0, 3));
  auto c1 = RendezvousClient::connect(d.client_options(1, 3));
  ASSERT_TRUE(c0.ok() && c1.ok());
  const pid_t victim = start_rank_child(d, 2, 3);
  ASSERT_GT(victim, 0);

  std::mutex mu;
  std::optional<Error> pushed;
  (*c1)->on_abort([&](const Error& e) {
    std::lock_guard lk(mu);
    pushed = e;
  });

  PendingCall blocked([&] { return (*c0)->barrier("never-complete", milliseconds(30'000)); });
  ASSERT_TRUE(daemon_holds_a_pending_call(**c1));
  const auto killed_at = Clock::now();
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  blocked.join();

  ASSERT_TRUE(blocked.failed.has_value());
  EXPECT_EQ(blocked.failed->code, Errc::aborted);
  EXPECT_NE(blocked.failed->message.find("rank 2 (host testhost2)"), std::string::npos)
      << blocked.failed->message;
  EXPECT_LT(blocked.failed_at - killed_at, milliseconds(5'000));

  // The push reached the idle client too, and later calls fail the same way.
  EXPECT_TRUE(poll_until(
      [&] {
        std::lock_guard lk(mu);
        return pushed.has_value();
      },
      milliseconds(5'000)));
  {
    std::lock_guard lk(mu);
    ASSERT_TRUE(pushed.has_value());
    EXPECT_EQ(pushed->code, Errc::aborted);
    EXPECT_NE(pushed->message.find("rank 2"), std::string::npos);
  }
  auto later = (*c1)->set("x", "y");
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code, Errc::aborted);

  // A newcomer learns it at hello.
  auto late = RendezvousClient::connect(d.client_options(-1, 3, PeerRole::agent));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, Errc::aborted);
  EXPECT_NE(late.error().message.find("rank 2"), std::string::npos);
}

TEST(Liveness, AgentsComeAndGoWithoutAborting) {
  DaemonProcess d(1);
  ASSERT_TRUE(d.ready());
  auto rank = RendezvousClient::connect(d.client_options(0, 1));
  ASSERT_TRUE(rank.ok());
  for (int i = 0; i < 3; ++i) {
    auto a = RendezvousClient::connect(d.client_options(-1, 1, PeerRole::agent));
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE((*a)->set("MASTER_PORT", "29500").ok());
    // Destroyed without an explicit goodbye: the destructor says it.
  }
  {
    RawConn raw(d.port());  // an agent that just drops its socket
    ASSERT_TRUE(raw.hello());
  }
  EXPECT_TRUE((*rank)->set("still", "fine").ok());
  EXPECT_EQ(*(*rank)->get("MASTER_PORT"), "29500");
}

TEST(Liveness, SilentRankIsDeclaredDeadAfterHeartbeatTimeout) {
  DaemonProcess d(2, {"--heartbeat-timeout-ms", "600"});
  ASSERT_TRUE(d.ready());
  auto c0 = RendezvousClient::connect(d.client_options(0, 2));
  ASSERT_TRUE(c0.ok());
  RawConn silent(d.port());  // says hello as rank 1, then never a heartbeat
  ASSERT_TRUE(silent.hello(kSecret, 1, proto::ROLE_RANK));
  const auto t0 = Clock::now();
  auto r = (*c0)->get("never", milliseconds(10'000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::aborted);
  EXPECT_NE(r.error().message.find("rank 1 (host rawhost) sent no heartbeat"), std::string::npos)
      << r.error().message;
  EXPECT_LT(Clock::now() - t0, milliseconds(3'000));
}

TEST(Liveness, HeartbeatsKeepAnIdleRankAlive) {
  DaemonProcess d(2, {"--heartbeat-timeout-ms", "600"});
  auto c0 = connect_rank(d, 0, 2);  // heartbeats every 200 ms
  auto c1 = connect_rank(d, 1, 2);
  ASSERT_TRUE(c0 && c1);
  // Rank 1 waits 2 s (more than three heartbeat timeouts) for a key rank 0 never sets.
  auto r = c1->get("late", milliseconds(2'000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::timeout) << r.error().message;
  expect_stats(*c0, {"aborted no"}, {"heartbeats 0\n"});
}

TEST(Liveness, AForkedChildDestroyingItsCopyDoesNotEndTheParentsConnection) {
  DaemonProcess d(1);
  auto c = connect_rank(d, 0, 1);
  ASSERT_TRUE(c);
  const pid_t kid = fork();
  if (kid == 0) {
    c.reset();  // as exit() would in a data-loader worker
    _exit(0);
  }
  int st = 0;
  waitpid(kid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_TRUE(c->set("still", "mine").ok());
  expect_stats(*c, {"aborted no", "ranks_goodbye 0"});
}

TEST(Liveness, ExplicitAbortReachesEveryone) {
  DaemonProcess d(2);
  auto c0 = connect_rank(d, 0, 2);
  auto c1 = connect_rank(d, 1, 2);
  ASSERT_TRUE(c0 && c1);
  std::thread t([&] {
    auto r = c1->get("x", milliseconds(10'000));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::aborted);
    EXPECT_NE(r.error().message.find("loss is NaN"), std::string::npos);
  });
  ASSERT_TRUE(daemon_holds_a_pending_call(*c0));
  ASSERT_TRUE(c0->abort("loss is NaN").ok());
  t.join();
}

TEST(Liveness, ClientReportsLossOfTheDaemon) {
  auto d = std::make_unique<DaemonProcess>(1);
  ASSERT_TRUE(d->ready());
  auto c = RendezvousClient::connect(d->client_options(0, 1));
  ASSERT_TRUE(c.ok());
  std::atomic<bool> told{false};
  (*c)->on_abort([&](const Error& e) {
    if (e.code == Errc::connection) told = true;
  });
  kill(d->pid(), SIGKILL);
  ASSERT_TRUE(d->wait_exit(milliseconds(5'000)).has_value());
  EXPECT_TRUE(poll_until([&] { return told.load(); }, milliseconds(5'000)));
  auto r = (*c)->set("a", "b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::connection);
}

}  // namespace
}  // namespace dp::test
