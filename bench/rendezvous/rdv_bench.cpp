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
#include <functional>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "bench_daemon.hpp"
#include "dp/params.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace {

using namespace dp::bench;

enum class St { idle, connecting, challenge, hello };

// One connection to the daemon: a rank of its own (flat path), or a node
// agent speaking for `nranks` ranks (--ranks-per-node).
struct Peer {
  int index = 0;  // rank (flat) or node number
  int first_rank = 0, nranks = 1;
  bool node = false;
  int fd = -1;
  St st = St::idle;
  bool said_goodbye = false;
  int batch = 0;    // the next batch of the workflow to send
  int pending = 0;  // replies still due for the batches sent
  std::string nonce;
  dp::rdv::FrameDecoder dec{1 << 20};
};

struct WorkerResult {
  int64_t first_connect = 0;
  int64_t last_done = 0;
  int failures = 0;
};

struct Workflow {
  int world = 0;
  bool pipeline = false;
  std::string id = std::string(128, 'I');
};

// Request ids name the workflow step, so replies need no other bookkeeping.
// The workflow is sent in batches: hello, own keys, the ID (rank 0's
// connection), get the ID, the barrier.
enum class Step { hello = 1, set_own, set_id, get_id, barrier, goodbye };
constexpr Step kBatches[] = {Step::hello, Step::set_own, Step::set_id, Step::get_id, Step::barrier};
constexpr int kBatchCount = 5;

void fill_hello(dp::proto::Hello* h, const Peer& p, int world) {
  h->set_protocol_version(dp::rdv::protocol_range().newest);
  h->set_world_size(world);
  h->set_host("bench");
  if (!p.node) {
    h->set_role(dp::proto::ROLE_RANK);
    h->set_rank(p.first_rank);
    h->set_proof(
        dp::rdv::hello_proof(kSecret, p.nonce, dp::proto::ROLE_RANK, p.first_rank, world, "bench"));
    return;
  }
  std::vector<int32_t> ranks;
  for (int r = 0; r < p.nranks; ++r) ranks.push_back(p.first_rank + r);
  h->set_role(dp::proto::ROLE_NODE);
  for (int32_t r : ranks) h->add_node_ranks(r);
  h->set_proof(
      dp::rdv::hello_proof(kSecret, p.nonce, dp::proto::ROLE_NODE, 0, world, "bench", ranks));
}

// One request of the workflow; `rank` picks the own key of a node's rank.
dp::proto::Request request_for(Step st, const Peer& p, const Workflow& w, int rank) {
  dp::proto::Request req;
  req.set_id(static_cast<uint64_t>(st));
  switch (st) {
    case Step::hello: fill_hello(req.mutable_hello(), p, w.world); break;
    case Step::set_own:
      req.mutable_set()->set_key("rank/" + std::to_string(rank));
      req.mutable_set()->set_value("ready");
      break;
    case Step::set_id:
      req.mutable_set()->set_key("nccl_id");
      req.mutable_set()->set_value(w.id);
      req.mutable_set()->set_once(p.node);  // agents cache it
      break;
    case Step::get_id:
      req.mutable_get()->set_key("nccl_id");
      req.mutable_get()->set_blocking(true);
      req.mutable_get()->set_timeout_ms(60'000);
      break;
    case Step::barrier:
      req.mutable_barrier()->set_name("start");
      req.mutable_barrier()->set_timeout_ms(60'000);
      for (int r = 0; p.node && r < p.nranks; ++r)
        req.mutable_barrier()->add_ranks(p.first_rank + r);
      break;
    case Step::goodbye: req.mutable_goodbye(); break;
  }
  return req;
}

// The ranks' local hop to their node agent is simulated in-process: each
// message is framed and decoded once per rank, as the agent would over its
// local socket, without a socket of its own.
template <class Msg>
int local_hop(const Msg& m, int ranks) {
  int bad = 0;
  for (int i = 0; i < ranks; ++i) {
    std::string f;
    dp::rdv::append_frame(m, f);
    dp::rdv::FrameDecoder d{1 << 20};
    d.feed(f.data(), f.size());
    std::string_view payload;
    Msg back;
    if (d.next(payload) != dp::rdv::FrameDecoder::Status::frame ||
        !back.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
      ++bad;
  }
  return bad;
}

// Appends batch b of the workflow to out; returns how many replies it asks for.
int append_batch(const Peer& p, const Workflow& w, int b, std::string& out, WorkerResult& res) {
  const Step st = kBatches[b];
  if (st == Step::set_id && p.first_rank != 0) return 0;
  if (st == Step::set_own) {
    for (int r = 0; r < p.nranks; ++r) {
      const auto req = request_for(st, p, w, p.first_rank + r);
      if (p.node) res.failures += local_hop(req, 1);
      dp::rdv::append_frame(req, out);
    }
    return p.nranks;
  }
  const auto req = request_for(st, p, w, p.first_rank);
  // A node's ranks each ask their agent; the agent sends one request for all.
  if (p.node && st != Step::hello && st != Step::set_id) res.failures += local_hop(req, p.nranks);
  dp::rdv::append_frame(req, out);
  return 1;
}

// Sequential: the next batch once every reply of the last one is in.
// Pipelined: the whole workflow in one send after the challenge.
void send_batches(Peer& p, const Workflow& w, WorkerResult& res) {
  std::string out;
  while (p.batch < kBatchCount && (w.pipeline || p.pending == 0)) {
    p.pending += append_batch(p, w, p.batch, out, res);
    ++p.batch;
  }
  if (out.empty()) return;
  // Replies are small and requests tiny: a full socket buffer means something is badly wrong.
  if (::send(p.fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    std::fprintf(stderr, "peer %d: short send\n", p.index);
    ++res.failures;
  }
}

void start_connect(Peer& p, int ep, uint16_t port) {
  p.fd = connect_from(p.index, p.node, port);
  p.st = St::connecting;
  // Edge-triggered: the connect completion and each reply arrive as one edge,
  // with no EPOLL_CTL_MOD between the two phases.
  epoll_event ev{};
  ev.events = EPOLLOUT | EPOLLIN | EPOLLET;
  ev.data.ptr = &p;
  epoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &ev);
}

// One reply to a workflow request. Returns true when it ends the peer's workflow.
bool on_reply(Peer& p, const dp::proto::Response& resp, const Workflow& w, WorkerResult& res,
              bool& hello_done) {
  if (resp.code() != dp::proto::OK) {
    std::fprintf(stderr, "peer %d: error %s\n", p.index, resp.message().c_str());
    ++res.failures;
  }
  const auto step = static_cast<Step>(resp.id());
  hello_done = step == Step::hello;
  // The agent answers each of its ranks (the ID from its cache, the barrier's release).
  if (p.node && (step == Step::get_id || step == Step::barrier))
    res.failures += local_hop(resp, p.nranks);
  if (step == Step::get_id && resp.value() != w.id) ++res.failures;
  --p.pending;
  if (step == Step::barrier) {
    res.last_done = std::max(res.last_done, now_ns());
    return true;
  }
  send_batches(p, w, res);
  return false;
}

// Reads what arrived for p. Returns how many peers finished (0 or 1).
int drain(Peer& p, const Workflow& w, WorkerResult& res, const std::function<void()>& hello_done) {
  for (;;) {
    char buf[4096];
    const ssize_t got = recv(p.fd, buf, sizeof buf, 0);
    if (got < 0 && errno == EAGAIN) return 0;
    if (got <= 0) {
      std::fprintf(stderr, "peer %d: connection closed before the barrier\n", p.index);
      ++res.failures;
      p.said_goodbye = true;  // nothing more to do for it
      return 1;
    }
    p.dec.feed(buf, static_cast<size_t>(got));
    std::string_view payload;
    while (p.dec.next(payload) == dp::rdv::FrameDecoder::Status::frame) {
      dp::proto::Response resp;
      resp.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
      if (resp.id() == 0 && resp.code() == dp::proto::OK) {
        if (p.st == St::challenge && !resp.challenge().empty()) {
          p.st = St::hello;
          p.nonce = resp.challenge();
          send_batches(p, w, res);
        }
        continue;  // a keepalive
      }
      bool was_hello = false;
      const bool finished = on_reply(p, resp, w, res, was_hello);
      if (was_hello) hello_done();
      if (finished) {
        p.said_goodbye = true;  // sent once every peer of this worker is out
        return 1;
      }
    }
    if (static_cast<size_t>(got) < sizeof buf) return 0;
  }
}

struct Slice {
  int first_peer = 0, count = 0, ranks_per_node = 0;  // 0: flat path
};

std::vector<Peer> make_peers(const Slice& s) {
  std::vector<Peer> peers(static_cast<size_t>(s.count));
  for (int i = 0; i < s.count; ++i) {
    Peer& p = peers[static_cast<size_t>(i)];
    p.index = s.first_peer + i;
    p.node = s.ranks_per_node > 0;
    p.nranks = p.node ? s.ranks_per_node : 1;
    p.first_rank = p.index * p.nranks;
  }
  return peers;
}

WorkerResult run_worker(uint16_t port, const Workflow& w, const Slice& s, int inflight) {
  WorkerResult res;
  // Thousands of simulated peers need as many sockets. Only the workers take
  // the hard limit: the daemon must cope with the caller's soft limit itself.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  std::vector<Peer> peers = make_peers(s);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  int next = 0, active = 0, done = 0;
  res.first_connect = now_ns();
  auto launch_more = [&] {
    while (next < s.count && active < inflight) {
      start_connect(peers[static_cast<size_t>(next++)], ep, port);
      ++active;
    }
  };
  const std::function<void()> hello_done = [&] {
    --active;
    launch_more();
  };
  launch_more();
  std::vector<epoll_event> evs(1024);
  while (done < s.count) {
    const int n = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10'000);
    if (n <= 0) {
      std::fprintf(stderr, "worker %d: stalled with %d of %d peers done\n", s.first_peer, done,
                   s.count);
      res.failures += s.count - done;
      break;
    }
    for (int i = 0; i < n; ++i) {
      Peer& p = *static_cast<Peer*>(evs[i].data.ptr);
      if (p.st == St::connecting) {
        if (evs[i].events & (EPOLLERR | EPOLLHUP)) {  // refused under overload: try again
          close(p.fd);
          start_connect(p, ep, port);
          continue;
        }
        p.st = St::challenge;  // the daemon speaks first
        if (!(evs[i].events & EPOLLIN)) continue;
      }
      if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) || p.said_goodbye) continue;
      done += drain(p, w, res, hello_done);
    }
  }
  // Leave cleanly (no abort): goodbye (a node's covers its ranks), then close
  // without waiting for the reply; the daemon handles it before the end of the stream.
  for (auto& p : peers) {
    if (p.fd < 0) continue;
    std::string f;
    dp::rdv::append_frame(request_for(Step::goodbye, p, w, p.first_rank), f);
    [[maybe_unused]] ssize_t sent = ::send(p.fd, f.data(), f.size(), MSG_NOSIGNAL);
  }
  for (auto& p : peers) {
    if (p.fd >= 0) close(p.fd);
  }
  close(ep);
  return res;
}

struct Options {
  std::string daemon_path;
  int ranks = 1024, workers = 4, inflight = 1024, runs = 3, pipeline = 0, ranks_per_node = 0;
  std::string heartbeat_ms = "5000";
};

// A whole number for `opt`; false (and a message) when it is none.
bool whole(const std::string& opt, const std::string& v, long long lo, long long hi, int& out) {
  auto n = dp::parse_whole_number(v, lo, hi);
  if (!n) std::fprintf(stderr, "%s %s: %s\n", opt.c_str(), v.c_str(), n.error().message.c_str());
  else out = static_cast<int>(*n);
  return n.ok();
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    bool ok = true;
    if (a == "--daemon") o.daemon_path = v;
    else if (a == "--ranks") ok = whole(a, v, 1, 1 << 24, o.ranks);
    else if (a == "--workers") ok = whole(a, v, 1, 1024, o.workers);
    else if (a == "--inflight") ok = whole(a, v, 1, 1 << 24, o.inflight);
    else if (a == "--runs") ok = whole(a, v, 1, 1000, o.runs);
    else if (a == "--pipeline") ok = whole(a, v, 0, 1, o.pipeline);
    else if (a == "--ranks-per-node") ok = whole(a, v, 0, 1 << 16, o.ranks_per_node);
    else if (a == "--heartbeat-timeout-ms") o.heartbeat_ms = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return false;
    }
    if (!ok) return false;
  }
  const bool nodes_fit =
      o.ranks_per_node == 0 || (o.ranks_per_node > 0 && o.ranks % o.ranks_per_node == 0);
  if (o.daemon_path.empty() || o.ranks < 1 || o.workers < 1 || o.inflight < 1 || o.runs < 1 ||
      !nodes_fit) {
    std::fprintf(stderr,
                 "usage: dp-rdv-bench --daemon PATH [--ranks N] [--workers P] [--inflight K] "
                 "[--runs R] [--pipeline 0|1] [--ranks-per-node K (dividing N; node agents)]\n");
    return false;
  }
  return true;
}

struct RunResult {
  double wall = 0, cpu = 0, rss_mib = 0;
  int failures = 0;
};

// One start-up: a fresh daemon, the peers spread over worker processes.
RunResult run_once(const Options& o) {
  const int peers = o.ranks_per_node > 0 ? o.ranks / o.ranks_per_node : o.ranks;
  Daemon d = start_daemon(o.daemon_path, o.ranks, o.ranks_per_node > 0 ? peers : 0,
                          std::stoll(o.heartbeat_ms));
  Workflow w;
  w.world = o.ranks;
  w.pipeline = o.pipeline != 0;
  const int per = (peers + o.workers - 1) / o.workers;
  const auto results = run_in_workers<WorkerResult>(
      (peers + per - 1) / per,
      [&](int k) {
        const Slice s{k * per, std::min(per, peers - k * per), o.ranks_per_node};
        return run_worker(d.port, w, s, std::max(1, o.inflight / o.workers));
      },
      [] {}, [] {});
  int64_t first = INT64_MAX, last = 0;
  RunResult out;
  for (const auto& r : results) {
    if (!r) {
      ++out.failures;
      continue;
    }
    first = std::min(first, r->first_connect);
    last = std::max(last, r->last_done);
    out.failures += r->failures;
  }
  out.rss_mib = static_cast<double>(vm_hwm_kib(d.pid)) / 1024.0;
  out.cpu = cpu_seconds(d.pid);
  kill(d.pid, SIGTERM);
  waitpid(d.pid, nullptr, 0);
  out.wall = static_cast<double>(last - first) / 1e9;
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  signal(SIGPIPE, SIG_IGN);
  const std::string mode =
      o.ranks_per_node > 0 ? "node" + std::to_string(o.ranks_per_node) : std::string("flat");
  std::vector<double> walls, cpus, rss;
  for (int run = 0; run < o.runs; ++run) {
    const RunResult r = run_once(o);
    walls.push_back(r.wall);
    cpus.push_back(r.cpu);
    rss.push_back(r.rss_mib);
    std::printf(
        "dp-rendezvousd ranks=%d mode=%s pipeline=%d run=%d wall_s=%.3f daemon_peak_rss_mib=%.1f "
        "daemon_cpu_s=%.2f failures=%d\n",
        o.ranks, mode.c_str(), o.pipeline, run, r.wall, r.rss_mib, r.cpu, r.failures);
    std::fflush(stdout);
  }
  std::printf(
      "dp-rendezvousd ranks=%d mode=%s pipeline=%d median_wall_s=%.3f median_cpu_s=%.2f "
      "max_rss_mib=%.1f\n",
      o.ranks, mode.c_str(), o.pipeline, median(walls), median(cpus),
      *std::max_element(rss.begin(), rss.end()));
  return 0;
}
