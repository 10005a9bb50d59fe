// dp-rdv-bench: start-up workflow of N simulated ranks against dp-rendezvousd
// on loopback. Each rank has its own connection: hello, set its own key,
// rank 0 publishes a 128-byte ID, every rank gets it, one barrier. Wall time
// runs from the first connect to the last rank out of the barrier. Ranks are
// spread over several worker processes (the fd limit is per process); each
// worker drives its ranks with one epoll loop, one state machine per rank.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "frame_codec.hpp"
#include "hello_proof.hpp"

namespace {

const std::string kSecret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

enum class St { idle, connecting, challenge, hello };

struct Rank {
  int rank = 0;
  int fd = -1;
  St st = St::idle;
  bool said_goodbye = false;
  dp::rdv::FrameDecoder dec{1 << 20};
};

struct WorkerResult {
  int64_t first_connect = 0;
  int64_t last_done = 0;
  int failures = 0;
};

// Request ids name the workflow step, so replies need no other bookkeeping.
enum class Step { hello = 1, set_own, set_id, get_id, barrier, goodbye };

dp::proto::Request request_for(Step st, int rank, int world, const std::string& id,
                               const std::string& nonce = {}) {
  dp::proto::Request req;
  req.set_id(static_cast<uint64_t>(st));
  switch (st) {
    case Step::hello: {
      auto* h = req.mutable_hello();
      h->set_protocol_version(dp::rdv::kProtocolVersion);
      h->set_role(dp::proto::ROLE_RANK);
      h->set_rank(rank);
      h->set_world_size(world);
      h->set_host("bench");
      h->set_proof(
          dp::rdv::hello_proof(kSecret, nonce, dp::proto::ROLE_RANK, rank, world, "bench"));
      break;
    }
    case Step::set_own:
      req.mutable_set()->set_key("rank/" + std::to_string(rank));
      req.mutable_set()->set_value("ready");
      break;
    case Step::set_id:
      req.mutable_set()->set_key("nccl_id");
      req.mutable_set()->set_value(id);
      break;
    case Step::get_id:
      req.mutable_get()->set_key("nccl_id");
      req.mutable_get()->set_blocking(true);
      req.mutable_get()->set_timeout_ms(60'000);
      break;
    case Step::barrier:
      req.mutable_barrier()->set_name("start");
      req.mutable_barrier()->set_timeout_ms(60'000);
      break;
    case Step::goodbye: req.mutable_goodbye(); break;
  }
  return req;
}

void send_req(Rank& r, const dp::proto::Request& req) {
  std::string f;
  dp::rdv::append_frame(req, f);
  // Replies are small and requests tiny: a full socket buffer means something is badly wrong.
  if (::send(r.fd, f.data(), f.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(f.size())) {
    std::fprintf(stderr, "rank %d: short send\n", r.rank);
  }
}

void start_connect(Rank& r, int ep, uint16_t port) {
  r.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(r.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Real ranks come from many hosts. From one source address, 16 384
  // connections to one port exhaust the ephemeral range and connect() spends
  // its time searching for a free port, so each rank takes a source address
  // of its own in 127.0.0.0/8 and lets connect() pick the port.
  setsockopt(r.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | static_cast<uint32_t>(r.rank % 4096 + 1));
  bind(r.fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(r.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  r.st = St::connecting;
  // Edge-triggered: the connect completion and each reply arrive as one edge,
  // with no EPOLL_CTL_MOD between the two phases.
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN | EPOLLET;
  ev.data.ptr = &r;
  epoll_ctl(ep, EPOLL_CTL_ADD, r.fd, &ev);
}

// Hello with the proof for this connection's nonce; pipelined: the whole workflow in one send.
void answer_challenge(Rank& r, int world, const std::string& id, const std::string& nonce,
                      bool pipeline, WorkerResult& res) {
  if (!pipeline) {
    send_req(r, request_for(Step::hello, r.rank, world, id, nonce));
    return;
  }
  std::string all;
  for (Step st : {Step::hello, Step::set_own, Step::set_id, Step::get_id, Step::barrier}) {
    if (st == Step::set_id && r.rank != 0) continue;
    dp::rdv::append_frame(request_for(st, r.rank, world, id, nonce), all);
  }
  if (::send(r.fd, all.data(), all.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(all.size()))
    ++res.failures;
}

WorkerResult run_worker(uint16_t port, int world, int first, int count, int inflight,
                        bool pipeline) {
  WorkerResult res;
  // Thousands of simulated ranks need as many sockets. Only the workers take
  // the hard limit: the daemon must cope with the caller's soft limit itself.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  std::vector<Rank> ranks(count);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  int next = 0, active = 0, done = 0;
  res.first_connect = now_ns();
  auto launch_more = [&] {
    while (next < count && active < inflight) {
      ranks[next].rank = first + next;
      start_connect(ranks[next], ep, port);
      ++next;
      ++active;
    }
  };
  launch_more();
  std::vector<epoll_event> evs(1024);
  const std::string id(128, 'I');
  while (done < count) {
    const int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10'000);
    if (n <= 0) {
      std::fprintf(stderr, "worker %d: stalled with %d of %d ranks done\n", first, done, count);
      res.failures += count - done;
      break;
    }
    for (int i = 0; i < n; ++i) {
      Rank& r = *static_cast<Rank*>(evs[i].data.ptr);
      if (r.st == St::connecting) {
        if (evs[i].events & (EPOLLERR | EPOLLHUP)) {  // refused under overload: try again
          close(r.fd);
          start_connect(r, ep, port);
          continue;
        }
        r.st = St::challenge;  // the daemon speaks first
        if (!(evs[i].events & EPOLLIN)) continue;
      }
      if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) || r.said_goodbye) continue;
      // Drain the edge: a short read means nothing more was queued.
      for (;;) {
        char buf[4096];
        const ssize_t got = recv(r.fd, buf, sizeof buf, 0);
        if (got < 0 && errno == EAGAIN) break;
        if (got <= 0) {
          std::fprintf(stderr, "rank %d: connection closed before the barrier\n", r.rank);
          ++res.failures;
          ++done;
          r.said_goodbye = true;  // nothing more to do for it
          break;
        }
        r.dec.feed(buf, static_cast<size_t>(got));
        std::string_view payload;
        while (r.dec.next(payload) == dp::rdv::FrameDecoder::Status::frame) {
          dp::proto::Response resp;
          resp.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
          if (resp.id() == 0 && resp.code() == dp::proto::OK) {
            if (r.st == St::challenge && !resp.challenge().empty()) {
              r.st = St::hello;
              answer_challenge(r, world, id, resp.challenge(), pipeline, res);
            }
            continue;  // a keepalive
          }
          if (resp.code() != dp::proto::OK) {
            std::fprintf(stderr, "rank %d: error %s\n", r.rank, resp.message().c_str());
            ++res.failures;
          }
          const auto step = static_cast<Step>(resp.id());
          if (step == Step::hello) {
            --active;
            launch_more();
          }
          if (step == Step::get_id && resp.value() != id) ++res.failures;
          if (step == Step::barrier) {
            res.last_done = std::max(res.last_done, now_ns());
            ++done;
            r.said_goodbye = true;  // sent below, once every rank of this worker is out
            continue;
          }
          if (pipeline) continue;
          Step next_step = static_cast<Step>(static_cast<int>(step) + 1);
          if (next_step == Step::set_id && r.rank != 0) next_step = Step::get_id;
          send_req(r, request_for(next_step, r.rank, world, id));
        }
        if (static_cast<size_t>(got) < sizeof buf) break;
      }
    }
  }
  // Leave cleanly (no abort): goodbye, then close without waiting for the reply;
  // the daemon handles the goodbye before it sees the end of the stream.
  for (auto& r : ranks) {
    if (r.fd < 0) continue;
    send_req(r, request_for(Step::goodbye, r.rank, world, id));
  }
  for (auto& r : ranks) {
    if (r.fd >= 0) close(r.fd);
  }
  close(ep);
  return res;
}

struct Daemon {
  pid_t pid = -1;
  uint16_t port = 0;
};

Daemon start_daemon(const std::string& path, int world, const std::string& heartbeat_ms) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) std::exit(1);
  Daemon d;
  d.pid = fork();
  if (d.pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    const std::string w = std::to_string(world);
    execl(path.c_str(), path.c_str(), "--world-size", w.c_str(), "--job-id", "bench", "--step-id",
          "0", "--listen", "127.0.0.1", "--heartbeat-timeout-ms", heartbeat_ms.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  const std::string s = kSecret + "\n";
  if (write(in[1], s.data(), s.size()) < 0) std::exit(1);
  close(in[1]);
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  close(out[0]);
  if (line.rfind("READY ", 0) != 0) {
    std::fprintf(stderr, "daemon did not start: %s\n", line.c_str());
    std::exit(1);
  }
  d.port = static_cast<uint16_t>(std::atoi(line.c_str() + 6));
  return d;
}

long vm_hwm_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (f >> key) {
    if (key == "VmHWM:") {
      long v = 0;
      f >> v;
      return v;
    }
  }
  return -1;
}

// CPU seconds (user + system) the daemon used so far: a figure that, unlike
// wall time, does not depend on how busy the rest of the machine is.
double cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
  std::string daemon_path;
  int ranks = 1024, workers = 4, inflight = 1024, runs = 3, pipeline = 0;
  std::string heartbeat_ms = "5000";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    if (a == "--daemon") daemon_path = v;
    else if (a == "--ranks") ranks = std::atoi(v.c_str());
    else if (a == "--workers") workers = std::atoi(v.c_str());
    else if (a == "--inflight") inflight = std::atoi(v.c_str());
    else if (a == "--runs") runs = std::atoi(v.c_str());
    else if (a == "--pipeline") pipeline = std::atoi(v.c_str());
    else if (a == "--heartbeat-timeout-ms") heartbeat_ms = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (daemon_path.empty() || ranks < 1 || workers < 1 || inflight < 1 || runs < 1) {
    std::fprintf(stderr,
                 "usage: dp-rdv-bench --daemon PATH [--ranks N] [--workers P] [--inflight K] "
                 "[--runs R] [--pipeline 0|1]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  std::vector<double> walls;
  for (int run = 0; run < runs; ++run) {
    Daemon d = start_daemon(daemon_path, ranks, heartbeat_ms);
    std::vector<pid_t> kids;
    std::vector<int> pipes;
    const int per = (ranks + workers - 1) / workers;
    for (int w = 0; w < workers; ++w) {
      const int first = w * per;
      const int count = std::min(per, ranks - first);
      if (count <= 0) break;
      int p[2];
      if (pipe(p) != 0) return 1;
      const pid_t pid = fork();
      if (pid == 0) {
        close(p[0]);
        WorkerResult r =
            run_worker(d.port, ranks, first, count, std::max(1, inflight / workers), pipeline != 0);
        if (write(p[1], &r, sizeof r) != sizeof r) _exit(1);
        _exit(0);
      }
      close(p[1]);
      kids.push_back(pid);
      pipes.push_back(p[0]);
    }
    int64_t first = INT64_MAX, last = 0;
    int failures = 0;
    for (size_t i = 0; i < kids.size(); ++i) {
      WorkerResult r{};
      if (read(pipes[i], &r, sizeof r) != sizeof r) ++failures;
      close(pipes[i]);
      waitpid(kids[i], nullptr, 0);
      first = std::min(first, r.first_connect);
      last = std::max(last, r.last_done);
      failures += r.failures;
    }
    const long hwm = vm_hwm_kib(d.pid);
    const double cpu = cpu_seconds(d.pid);
    kill(d.pid, SIGTERM);
    waitpid(d.pid, nullptr, 0);
    const double wall = static_cast<double>(last - first) / 1e9;
    walls.push_back(wall);
    std::printf(
        "dp-rendezvousd ranks=%d pipeline=%d run=%d wall_s=%.3f daemon_peak_rss_mib=%.1f "
        "daemon_cpu_s=%.2f "
        "failures=%d\n",
        ranks, pipeline, run, wall, static_cast<double>(hwm) / 1024.0, cpu, failures);
    std::fflush(stdout);
  }
  std::sort(walls.begin(), walls.end());
  std::printf("dp-rendezvousd ranks=%d pipeline=%d median_wall_s=%.3f\n", ranks, pipeline,
              walls[walls.size() / 2]);
  return 0;
}
