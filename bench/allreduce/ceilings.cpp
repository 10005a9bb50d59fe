// The machine's limits for a 2-rank all-reduce, measured in the same run:
// memcpy bandwidth and loopback TCP bandwidth (one direction, and both
// directions at once, which is what a 2-rank ring does).
// Prints: ceiling,<name>,<bytes>,<GBps> (median of several rounds).
//   dp_bench_ceilings [BYTES [ROUNDS]]   (default 64 MiB, 9 rounds)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "dp/params.hpp"

namespace {

using Clock = std::chrono::steady_clock;
// Per round, and rounds per figure; set once from the command line.
size_t g_bytes = size_t{64} << 20;
int g_rounds = 9;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double memcpy_gbps() {
  std::vector<char> a(g_bytes, 1), b(g_bytes, 2);
  std::vector<double> r;
  for (int i = 0; i < g_rounds; ++i) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), g_bytes);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    a[static_cast<size_t>(i)] = b[static_cast<size_t>(i) + 1];  // keep the copy observable
    r.push_back(g_bytes / s / 1e9);
  }
  return median(r);
}

void send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, 0);
    if (w <= 0) std::exit(1);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void recv_all(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) std::exit(1);
    p += r;
    n -= static_cast<size_t>(r);
  }
}

// One round of g_bytes: one way, `sends` says this side's direction; both
// ways, each side sends and receives at once.
void transfer(int fd, bool both_ways, bool sends, const char* out, char* in) {
  if (!both_ways) {
    if (sends) send_all(fd, out, g_bytes);
    else recv_all(fd, in, g_bytes);
    return;
  }
  std::thread tx([&] { send_all(fd, out, g_bytes); });
  recv_all(fd, in, g_bytes);
  tx.join();
}

// Two processes on loopback, as two ranks would be; rounds of g_bytes.
double tcp_gbps(bool both_ways) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  listen(ls, 1);
  pid_t child = fork();
  if (child == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) _exit(1);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::vector<char> buf(g_bytes, 3), in(g_bytes);
    for (int i = 0; i < g_rounds + 1; ++i) {
      transfer(fd, both_ways, true, buf.data(), in.data());
      char ack;
      recv_all(fd, &ack, 1);
    }
    _exit(0);
  }
  int fd = accept(ls, nullptr, nullptr);
  std::vector<char> buf(g_bytes), out(g_bytes, 4);
  std::vector<double> r;
  for (int i = 0; i < g_rounds + 1; ++i) {
    auto t0 = Clock::now();
    transfer(fd, both_ways, false, out.data(), buf.data());
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    send_all(fd, "k", 1);
    if (i > 0) r.push_back(g_bytes / s / 1e9);  // first round warms up
  }
  close(fd);
  close(ls);
  waitpid(child, nullptr, 0);
  return median(r);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    auto bytes = dp::parse_whole_number(argv[1], 4096, 1ll << 34);
    auto rounds = argc > 2 ? dp::parse_whole_number(argv[2], 1, 1000) : dp::Result<long long>(9);
    if (!bytes || !rounds) {
      std::fprintf(stderr, "usage: dp_bench_ceilings [BYTES [ROUNDS]]: %s\n",
                   (bytes ? rounds : bytes).error().message.c_str());
      return 2;
    }
    g_bytes = static_cast<size_t>(*bytes);
    g_rounds = static_cast<int>(*rounds);
  }
  std::printf("ceiling,memcpy,%zu,%.3f\n", g_bytes, memcpy_gbps());
  std::printf("ceiling,tcp_loopback_one_way,%zu,%.3f\n", g_bytes, tcp_gbps(false));
  std::printf("ceiling,tcp_loopback_both_ways_per_direction,%zu,%.3f\n", g_bytes, tcp_gbps(true));
  return 0;
}
