// The one accept path of the daemon, its report socket and the node agent:
// every waiting connection is handed over (non-blocking, close-on-exec), and
// out of descriptors a waiting connection is refused instead of spinning.
#include "listener.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "loopback.hpp"  // tests/support

namespace dp::service {
namespace {

using Clock = std::chrono::steady_clock;

// A non-blocking listener on 127.0.0.1, port chosen by the OS.
UniqueFd listen_loopback(int& port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (!fd || bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
      listen(fd.get(), 64) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return UniqueFd();
  port = ntohs(sa.sin_port);
  return fd;
}

using dp::test::connect_loopback;

TEST(Listener, HandsOverEveryWaitingConnectionInBatches) {
  int port = 0;
  UniqueFd lfd = listen_loopback(port);
  ASSERT_TRUE(lfd);
  EventBasePtr base(event_base_new());
  std::vector<UniqueFd> accepted;
  Listener l;
  ASSERT_TRUE(l.start(base.get(), std::move(lfd), 2, "test", [&](UniqueFd c) {
                 accepted.push_back(std::move(c));
               }).ok());
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 5; ++i) {
    clients.push_back(connect_loopback(port));
    ASSERT_TRUE(clients.back());
  }
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (accepted.size() < 5 && Clock::now() < deadline)
    event_base_loop(base.get(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
  ASSERT_EQ(accepted.size(), 5u);
  for (const UniqueFd& c : accepted) {
    EXPECT_TRUE(fcntl(c.get(), F_GETFL) & O_NONBLOCK);
    EXPECT_TRUE(fcntl(c.get(), F_GETFD) & FD_CLOEXEC);
  }
}

// In a child whose every descriptor is taken: the listener refuses the
// waiting connection (the client sees it closed) and the loop stays idle.
// The child writes the CPU time it used over half a second of its loop.
[[noreturn]] void serve_out_of_descriptors(UniqueFd lfd, int ready_fd, int report_fd) {
  EventBasePtr base(event_base_new());
  int handed = 0;
  Listener l;
  if (!base ||
      !l.start(base.get(), std::move(lfd), 16, "listener_test", [&](UniqueFd) { ++handed; }).ok())
    _exit(2);
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = 64;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
  while (open("/dev/null", O_RDONLY) >= 0) {
  }
  if (write(ready_fd, "r", 1) != 1) _exit(4);
  const timeval half{0, 500'000};
  event_base_loopexit(base.get(), &half);
  event_base_dispatch(base.get());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const long cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
  const std::string line = std::to_string(handed) + " " + std::to_string(cpu_ms);
  _exit(write(report_fd, line.data(), line.size()) > 0 ? 0 : 5);
}

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

TEST(Listener, OutOfDescriptorsRefusesAConnectionWithoutSpinning) {
  int port = 0;
  UniqueFd lfd = listen_loopback(port);
  ASSERT_TRUE(lfd);
  int ready[2], report[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(report), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) serve_out_of_descriptors(std::move(lfd), ready[1], report[1]);
  lfd.reset();
  UniqueFd ready_r(ready[0]), report_r(report[0]);
  close(ready[1]);
  close(report[1]);
  const bool started = readable_within(ready_r.get(), 10'000);
  UniqueFd client = started ? connect_loopback(port) : UniqueFd();
  // Refused: the child closes it without a byte.
  char b = 0;
  const bool closed =
      client && readable_within(client.get(), 5'000) && recv(client.get(), &b, 1, 0) <= 0;
  const bool reported = readable_within(report_r.get(), 10'000);
  if (!reported) kill(pid, SIGKILL);
  char buf[64] = {};
  const ssize_t n = reported ? read(report_r.get(), buf, sizeof buf - 1) : 0;
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(started) << "the child never filled its descriptors";
  EXPECT_TRUE(closed) << "the waiting connection was not refused";
  ASSERT_TRUE(reported && n > 0) << "the child did not report (status " << status << ")";
  int handed = -1;
  long cpu_ms = -1;
  ASSERT_EQ(sscanf(buf, "%d %ld", &handed, &cpu_ms), 2) << buf;
  EXPECT_EQ(handed, 0);
  EXPECT_LT(cpu_ms, 250) << "a readable listener it could not accept from spun the loop";
}

}  // namespace
}  // namespace dp::service
