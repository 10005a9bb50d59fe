// The agent's first connection to the daemon: evicted before its hello by a
// stranger's flood, it tries again and gets in; evicted until its wait runs
// out, it says what happened, quoting the daemon.
#include "daemon_hello.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "frame_codec.hpp"
#include "hello_proof.hpp"

namespace dp::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kEviction =
    "evicted before its hello: 65 connections without hello from 10.9.9.9 "
    "(dp-rendezvousd --max-unauthenticated 64); closing the oldest";

// A daemon stand-in on 127.0.0.1: evicts the first `evictions` connections
// right after their challenge, then accepts the hello of the next.
class FakeDaemon {
 public:
  explicit FakeDaemon(int evictions) : evictions_(evictions) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof sa;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDaemon() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string addr() const { return "127.0.0.1:" + std::to_string(port_); }
  int hellos() const { return hellos_; }

 private:
  static void send_frame(int c, const proto::Response& r) {
    std::string f;
    rdv::append_frame(r, f);
    ASSERT_EQ(write(c, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  }
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      proto::Response challenge;
      challenge.set_challenge(std::string(rdv::kNonceBytes, 'n'));
      send_frame(c, challenge);
      if (evictions_-- > 0) {
        proto::Response evicted;
        evicted.set_code(proto::LIMIT);
        evicted.set_message(kEviction);
        send_frame(c, evicted);
      } else {
        char buf[4096];
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 5'000) == 1 && read(c, buf, sizeof buf) > 0) {
          ++hellos_;
          proto::Response ok;
          ok.set_id(1);
          send_frame(c, ok);
        }
      }
      close(c);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  int evictions_;
  std::atomic<int> hellos_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

NodeHello node(const std::string& addr) {
  return NodeHello{addr, std::string(64, 'a'), "n1", 2, {0, 1}};
}

TEST(DaemonHello, EvictedBeforeItsHelloTheAgentTriesAgainAndGetsIn) {
  FakeDaemon d(3);
  HelloRetry retry;
  retry.deadline = Clock::now() + 10s;
  retry.first_backoff = 5ms;
  auto link = hello_daemon(node(d.addr()), retry);
  ASSERT_TRUE(link) << link.error().message;
  EXPECT_EQ(link->reply.code(), proto::OK);
  EXPECT_EQ(d.hellos(), 1);
}

TEST(DaemonHello, EvictedUntilItsWaitRunsOutItSaysSoNotSrun) {
  FakeDaemon d(1'000'000);
  HelloRetry retry;
  // Long enough for the first eviction to arrive on a loaded sanitizer run;
  // a later try cut short by the deadline must not hide the daemon's words.
  retry.deadline = Clock::now() + 1s;
  retry.first_backoff = 5ms;
  auto link = hello_daemon(node(d.addr()), retry);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, Errc::limit);
  EXPECT_NE(link.error().message.find(
                "evicted before its hello: 65 connections without hello from 10.9.9.9"),
            std::string::npos)
      << link.error().message;
  EXPECT_NE(link.error().message.find(" tries in "), std::string::npos) << link.error().message;
  EXPECT_EQ(link.error().message.find("srun"), std::string::npos) << link.error().message;
}

TEST(DaemonHello, NobodyListeningEndsAtTheDeadline) {
  const auto start = Clock::now();
  HelloRetry retry;
  retry.deadline = start + 300ms;
  auto link = hello_daemon(node("127.0.0.1:1"), retry);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().code, Errc::connection) << link.error().message;
  EXPECT_LT(Clock::now() - start, 2s);
}

}  // namespace
}  // namespace dp::agent
