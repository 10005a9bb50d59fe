#include "torch_server_anchor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_daemon.hpp"
#include "torch_workflow.hpp"

namespace dp::bench {
namespace {

// PyTorch 1.13 and 2.0 servers speak the legacy dialect; newer ones both.
constexpr auto kDialect = torchstore::Dialect::legacy;

struct Server {
  pid_t pid = -1;
  int to = -1;  // its stdin: closing it ends the server
  uint16_t port = 0;
};

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "dp-store-bench: %s\n", what);
  std::exit(1);
}

Server start_server(const std::string& script) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) die("pipe failed");
  Server s;
  s.pid = fork();
  if (s.pid < 0) die("fork failed");
  if (s.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl("/usr/bin/python3", "python3", script.c_str(), "--serve", nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  s.to = in[1];
  std::string line;
  pollfd p{out[0], POLLIN, 0};
  char c;
  while (line.find('\n') == std::string::npos && poll(&p, 1, 60'000) == 1 &&
         read(out[0], &c, 1) == 1)
    line += c;
  close(out[0]);
  if (std::sscanf(line.c_str(), "port %hu", &s.port) != 1)
    die(("PyTorch's TCPStore server did not start (it said: '" + line + "')").c_str());
  return s;
}

struct Rank {
  int fd = -1;
  int rank = 0;
  int step = 0;
  std::string in, out;
};

void flush(Rank& r) {
  while (!r.out.empty()) {
    const ssize_t n = ::send(r.fd, r.out.data(), r.out.size(), MSG_NOSIGNAL);
    if (n <= 0) return;  // EAGAIN (or still connecting): EPOLLOUT brings it back
    r.out.erase(0, static_cast<size_t>(n));
  }
}

// Consumes the answers at hand and queues the next steps.
void advance(Rank& r, int world, int& done, int& failures, int& answered) {
  while (r.step <= kLastStep && r.in.size() >= answer_bytes(r.step)) {
    if (r.step == first_step(kDialect)) ++answered;
    const size_t need = answer_bytes(r.step);
    const std::string got = r.in.substr(0, need);
    r.in.erase(0, need);
    if (r.step == 3 && got.substr(8) != kNcclId) ++failures;
    if (r.step == 4) {
      int64_t v = 0;
      std::memcpy(&v, got.data(), sizeof v);
      if (v == world) r.out += barrier_done(kDialect);
    }
    if (r.step == kLastStep) {
      ++r.step;
      ++done;
      return;
    }
    ++r.step;
    r.out += workflow_step(kDialect, r.rank, r.step);
  }
}

}  // namespace

AnchorRun run_torch_server(const std::string& script, int world) {
  const Server srv = start_server(script);
  std::vector<Rank> ranks(static_cast<size_t>(world));
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<epoll_event> evs(1024);
  int opened = 0, done = 0, failures = 0, answered = 0;
  char buf[65536];
  const int64_t t0 = now_ns();
  const int64_t deadline = t0 + int64_t{900} * 1'000'000'000;
  while (done < world && failures == 0 && now_ns() < deadline) {
    // At most this many connections not answered yet: more overflow the
    // server's accept queue (it accepts between passes over every socket)
    // and their SYNs are retried for minutes, which no real client waits.
    constexpr int kUnanswered = 1024;
    for (const int until = std::min({world, opened + 256, answered + kUnanswered}); opened < until;
         ++opened) {
      Rank& r = ranks[static_cast<size_t>(opened)];
      r.rank = opened;
      r.fd = connect_from(opened, false, srv.port);
      if (r.fd < 0) die("socket failed");
      r.step = first_step(kDialect);
      r.out = workflow_step(kDialect, r.rank, r.step);
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
      ev.data.ptr = &r;
      epoll_ctl(ep, EPOLL_CTL_ADD, r.fd, &ev);
    }
    const int k = epoll_wait(ep, evs.data(), 1024, opened < world ? 0 : 1000);
    for (int e = 0; e < k; ++e) {
      Rank& r = *static_cast<Rank*>(evs[static_cast<size_t>(e)].data.ptr);
      ssize_t got;
      while ((got = ::recv(r.fd, buf, sizeof buf, 0)) > 0)
        r.in.append(buf, static_cast<size_t>(got));
      advance(r, world, done, failures, answered);
      if (r.step <= kLastStep && (got == 0 || (evs[static_cast<size_t>(e)].events & EPOLLERR))) {
        std::fprintf(stderr,
                     "dp-store-bench: rank %d: the server closed or refused its connection\n",
                     r.rank);
        ++failures;
      }
      flush(r);
    }
  }
  AnchorRun res;
  res.seconds = static_cast<double>(now_ns() - t0) / 1e9;
  res.failures = failures + (world - done);
  res.server_cpu = cpu_seconds(srv.pid);
  res.server_rss_kib = vm_hwm_kib(srv.pid);
  close(srv.to);
  waitpid(srv.pid, nullptr, 0);
  for (Rank& r : ranks)
    if (r.fd >= 0) close(r.fd);
  close(ep);
  return res;
}

}  // namespace dp::bench
