// dp-store-bench: PyTorch's store protocol through node agents, against the
// real dp-rendezvousd (run.sh --torch; the anchor is tcpstore_bench.py).
//
// Each simulated node is the node agent's own logic: an AgentCore on a real
// TCP connection to the daemon (hello, proof, ROLE_NODE) and a StoreFront,
// fed by --ranks-per-node simulated TCPStore clients in the same process. Each
// client sends the bytes a PyTorch 2.6 client of init_process_group("env://")
// with the agent store sends (VALIDATE, PING, ADD init/: TCPStore's worker
// count), then ProcessGroupNCCL's ID exchange (rank 0 SETs the 128-byte ID,
// every rank WAITs and GETs it, as TCPStore::get sends them) and one store
// barrier (ADD of a counter, the last rank SETs barrier_done, every rank
// WAITs for it): tcpstore_bench.py --torch-init's workflow. Only the client
// sockets are left out (each agent reads its clients on loopback; a process
// per node would measure the machine's scheduler, not slurm-dp). The nodes
// are spread over --agent-procs processes (default 2), as real agents run
// side by side on their own nodes. Wall time runs to the last client out of
// the barrier, from (--clock) the first connect of an agent (`connect`: the
// agents' hellos count) or the clients' first bytes (`tasks`: every agent
// said hello first, untimed, as in a real step, where slurmstepd starts the
// node's agent and it is connected before any task is launched).
//   dp-store-bench --daemon PATH --ranks N [--ranks-per-node R] [--runs K] [--agent-procs P]
//                  [--clock connect|tasks]
// One line per run, then the medians: seconds, daemon requests per node,
// daemon CPU seconds (with --clock tasks, from the clients' first bytes) and
// peak RSS.
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "agent_core.hpp"
#include "bench_daemon.hpp"
#include "dp/params.hpp"
#include "dp/sys_error.hpp"
#include "dp/torchstore/opcodes.hpp"
#include "dp/torchstore/request.hpp"
#include "frame_codec.hpp"
#include "store_front.hpp"
#include "torch_server_anchor.hpp"
#include "torch_workflow.hpp"

namespace {

using namespace dp::bench;
namespace ts = dp::torchstore;
using dp::agent::ConnId;

// One simulated rank: the step it is in and the bytes its answer needs.
struct Client {
  int rank = 0;
  int step = 0;
  std::string in;  // what the front sent, not yet consumed
};

struct Node;

struct Run {
  int world = 0;
  int done = 0;
  int failures = 0;
  std::deque<std::pair<Node*, int>> ready;  // clients whose answer arrived
  std::vector<Node*> due;                   // nodes whose fronts have reads to send
  std::vector<Node*> unsent;                // nodes with requests queued for the daemon
};

struct Node final : dp::agent::AgentOutbox, dp::agent::StoreOutbox {
  Node(Run& run, int index, std::vector<int32_t> ranks, int world)
      : run(run),
        index(index),
        core(config(index, std::move(ranks), world), *this, dp::agent::Clock::now()),
        front(core, *this) {}

  static dp::agent::AgentConfig config(int index, std::vector<int32_t> ranks, int world) {
    dp::agent::AgentConfig c;
    c.secret = kSecret;
    c.host = "node" + std::to_string(index);
    c.daemon_addr = "127.0.0.1";
    c.world_size = world;
    c.node_ranks = std::move(ranks);
    c.daemon_silence = std::chrono::milliseconds(0);
    return c;
  }

  void to_rank(ConnId, const dp::proto::Response&) override {}
  void close_rank(ConnId) override {}
  void to_daemon(const dp::proto::Request& r) override {
    if (out.empty()) run.unsent.push_back(this);
    dp::rdv::append_frame(r, out);
  }
  void to_client(ConnId c, std::string_view bytes) override {
    clients[c - 1].in += bytes;
    run.ready.emplace_back(this, static_cast<int>(c - 1));
  }
  void close_client(ConnId c, const std::string& why) override {
    std::fprintf(stderr, "node %d: client %llu closed: %s\n", index,
                 static_cast<unsigned long long>(c), why.c_str());
    ++run.failures;
  }
  void send_soon() override { run.due.push_back(this); }

  // Sends what is queued; a short write keeps the rest and asks for
  // EPOLLOUT, which is dropped again once everything left.
  void flush() {
    while (!out.empty()) {
      const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n <= 0) break;
      out.erase(0, static_cast<size_t>(n));
    }
    if (out.empty() != want_out) return;
    want_out = !out.empty();
    epoll_event ev{};
    ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0u);
    ev.data.ptr = this;
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
  }

  Run& run;
  int index;
  int fd = -1;
  int ep = -1;
  bool want_out = false;
  std::string out;
  dp::rdv::FrameDecoder dec{64u << 20};
  dp::agent::AgentCore core;
  dp::agent::StoreFront front;
  std::vector<Client> clients;
};

// Thousands of simulated peers need as many sockets. Only the bench's
// processes take the hard limit: the daemon copes with the caller's soft one.
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Sends step `step` of client c's workflow.
void send_step(Node& n, int c, int step) {
  Client& cl = n.clients[static_cast<size_t>(c)];
  cl.step = step;
  n.front.on_bytes(static_cast<ConnId>(c + 1), workflow_step(ts::Dialect::v2, cl.rank, step));
}

// Client c's answer arrived (maybe several, or part of one): go on.
void advance(Node& n, int c) {
  Client& cl = n.clients[static_cast<size_t>(c)];
  const size_t need = answer_bytes(cl.step);
  if (cl.step > kLastStep || cl.in.size() < need) return;
  const std::string_view got(cl.in.data(), need);
  if (cl.step == 3 && got.substr(8) != kNcclId) ++n.run.failures;
  int64_t v = 0;
  if (cl.step == 4) std::memcpy(&v, got.data(), sizeof v);
  cl.in.erase(0, need);  // before the front answers again (to_client appends)
  if (cl.step == 4 && v == n.run.world)
    n.front.on_bytes(static_cast<ConnId>(c + 1), barrier_done(ts::Dialect::v2));
  if (cl.step == kLastStep) {
    cl.step = kLastStep + 1;
    ++n.run.done;
    return;
  }
  send_step(n, c, cl.step + 1);
}

struct Result {
  double seconds = 0, daemon_cpu = 0, requests_per_node = 0;
  long daemon_rss_kib = 0;
  int failures = 0;
};

// Node n's clients connect to its agent's store and send their first bytes
// (queued in the core until its hello is answered).
void start_clients(Node& n) {
  for (size_t c = 0; c < n.clients.size(); ++c) {
    n.front.on_connect(static_cast<ConnId>(c + 1));
    send_step(n, static_cast<int>(c), 0);
  }
}

// Node i: its agent's connection to the daemon, and its clients unless they
// start later (--clock tasks).
std::unique_ptr<Node> open_node(Run& run, int ep, int i, int per_node, uint16_t port,
                                bool with_clients) {
  std::vector<int32_t> ranks;
  for (int r = i * per_node; r < std::min(run.world, (i + 1) * per_node); ++r) ranks.push_back(r);
  auto n = std::make_unique<Node>(run, i, ranks, run.world);
  for (int32_t r : ranks) n->clients.push_back(Client{r, 0, {}});
  n->fd = connect_from(i, true, port);
  if (n->fd < 0) {
    std::fprintf(stderr, "node %d: socket: %s\n", i, dp::errno_text().c_str());
    std::exit(1);
  }
  // The daemon, stopped first, closes first; the worker's exit then resets
  // (linger 0) instead of closing, so no run leaves 16 384 TIME_WAIT sockets
  // in the kernel's table to slow the next run's loopback (98 000 were left
  // after 21 runs in a row, and the medians drifted with them).
  const linger reset{1, 0};
  setsockopt(n->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  n->ep = ep;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = n.get();
  epoll_ctl(ep, EPOLL_CTL_ADD, n->fd, &ev);
  if (with_clients) start_clients(*n);
  return n;
}

// The fronts' reads of this pass leave.
void send_due(Run& run) {
  for (Node* d : run.due) d->front.send_due();
  run.due.clear();
}

// The end of an agent's pass: the fronts' reads leave, then what the nodes queued.
void send_queued(Run& run) {
  send_due(run);
  // Only the nodes that queued something: a pass over all would cost as
  // much as the work at 16 384 nodes.
  std::vector<Node*> unsent;
  unsent.swap(run.unsent);
  for (Node* n : unsent) n->flush();
}

// Clients whose answers arrived send their next steps.
void answer_clients(Run& run) {
  while (!run.ready.empty()) {
    auto [node, c] = run.ready.front();
    run.ready.pop_front();
    advance(*node, c);
  }
}

// One pass of the agents' loop: each readable node's daemon replies, its
// clients' next steps, then every node's reads and requests leave. One read
// per readable node, as the real agent's event loop does (level-triggered).
void pass(Run& run, const epoll_event* evs, int k) {
  static char buf[65536];
  for (int e = 0; e < k; ++e) {
    Node& n = *static_cast<Node*>(evs[e].data.ptr);
    if (evs[e].events & EPOLLIN) {
      const ssize_t got = ::recv(n.fd, buf, sizeof buf, 0);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) ++run.failures;
      if (got > 0) n.dec.feed(buf, static_cast<size_t>(got));
      std::string_view payload;
      while (n.dec.next(payload) == dp::rdv::FrameDecoder::Status::frame) {
        dp::proto::Response r;
        if (!r.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) ++run.failures;
        n.core.on_daemon_response(r, dp::agent::Clock::now());
      }
    }
    answer_clients(run);
    send_due(run);  // the agent's pass ends
    n.flush();      // EPOLLOUT after a short write
  }
  send_queued(run);
}

// --clock tasks: each agent process says when all its nodes are connected
// (ready), then waits for the parent's word to start their clients (go).
struct Gate {
  int ready_w = -1, go_r = -1;
};

// What one agent process sends back: its nodes' ranks out of the barrier,
// failures, requests at the daemon, and when its last rank was out.
struct Share {
  int done = 0, ranks = 0, failures = 0;
  uint64_t upstream = 0;
  int64_t last_done_ns = 0;
};

// The nodes i with i % procs == part, on one epoll loop. Nodes come in
// batches between passes: real ones connect at once, and a serial connect of
// every node first would leave the daemon idle.
Share drive_nodes(uint16_t port, int world, int per_node, int part, int procs, const Gate* gate) {
  raise_fd_limit();
  const int nodes = (world + per_node - 1) / per_node;
  Run run;
  run.world = world;
  std::vector<std::unique_ptr<Node>> mine;
  std::vector<int> indices;
  int ranks = 0;
  for (int i = part; i < nodes; i += procs) {
    indices.push_back(i);
    ranks += std::min(world, (i + 1) * per_node) - i * per_node;
  }
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<epoll_event> evs(1024);
  const int64_t deadline = now_ns() + int64_t{300} * 1'000'000'000;
  const size_t batch = static_cast<size_t>(std::max(1, 256 / procs));
  auto open_batch = [&](bool with_clients) {
    for (size_t j = mine.size(); j < std::min(indices.size(), mine.size() + batch); ++j)
      mine.push_back(open_node(run, ep, indices[j], per_node, port, with_clients));
  };
  auto connected = [&] {
    if (mine.size() < indices.size()) return false;
    return std::all_of(mine.begin(), mine.end(), [](auto& n) { return n->core.daemon_ready(); });
  };
  if (gate) {  // the agents' hellos, untimed
    while (!connected() && run.failures == 0 && now_ns() < deadline) {
      open_batch(false);
      const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 10);
      pass(run, evs.data(), k);
    }
    char c = 0;
    if (write(gate->ready_w, &c, 1) != 1 || read(gate->go_r, &c, 1) != 1) ++run.failures;
    for (auto& n : mine) start_clients(*n);
    answer_clients(run);  // what the agents answer themselves (PING)
    send_queued(run);
  }
  while (run.done < ranks && run.failures == 0 && now_ns() < deadline) {
    open_batch(true);
    const int wait_ms = mine.size() < indices.size() ? 0 : 1000;
    const int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), wait_ms);
    pass(run, evs.data(), k);
  }
  Share sh;
  sh.last_done_ns = now_ns();
  sh.done = run.done;
  sh.ranks = ranks;
  sh.failures = run.failures;
  for (auto& n : mine) sh.upstream += n->front.counters().upstream;
  return sh;
}

Result run_once(const std::string& daemon_path, int world, int per_node, int procs,
                bool tasks_clock) {
  const int nodes = (world + per_node - 1) / per_node;
  const int workers = std::min(procs, nodes);
  Daemon d = start_daemon(daemon_path, world, nodes, 0);
  int ready[2] = {-1, -1}, go[2] = {-1, -1};
  if (tasks_clock && (pipe(ready) != 0 || pipe(go) != 0)) {
    std::perror("dp-store-bench: pipe");
    std::exit(1);
  }
  const Gate gate{ready[1], go[0]};
  int64_t t0 = now_ns();
  double cpu0 = 0;
  Result res;
  // --clock tasks: the clock starts once every agent is connected.
  auto start_clients_everywhere = [&] {
    if (!tasks_clock) return;
    char c = 0;
    for (int k = 0; k < workers; ++k)
      if (read(ready[0], &c, 1) != 1) ++res.failures;
    t0 = now_ns();
    cpu0 = cpu_seconds(d.pid);
    for (int k = 0; k < workers; ++k)
      if (write(go[1], &c, 1) != 1) ++res.failures;
  };
  // The daemon's figures, then its end, while every node is still connected
  // (a node that left first would be node_lost).
  auto stop_daemon = [&] {
    res.daemon_cpu = cpu_seconds(d.pid) - cpu0;
    res.daemon_rss_kib = vm_hwm_kib(d.pid);
    kill(d.pid, SIGTERM);
    waitpid(d.pid, nullptr, 0);
  };
  const auto shares = run_in_workers<Share>(
      workers,
      [&](int k) {
        return drive_nodes(d.port, world, per_node, k, procs, tasks_clock ? &gate : nullptr);
      },
      start_clients_everywhere, stop_daemon);
  for (int f : {ready[0], ready[1], go[0], go[1]})
    if (f >= 0) close(f);
  int64_t last = t0;
  uint64_t upstream = 0;
  int done = 0;
  for (const auto& sh : shares) {
    if (!sh) continue;
    last = std::max(last, sh->last_done_ns);
    res.failures += sh->failures;
    done += sh->done;
    upstream += sh->upstream;
  }
  res.seconds = static_cast<double>(last - t0) / 1e9;
  res.failures += world - done;
  res.requests_per_node = static_cast<double>(upstream) / nodes;
  return res;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The anchor: the same clients straight to PyTorch's TCPStore server.
int run_anchor(const std::string& script, int world, long long runs) {
  raise_fd_limit();
  std::vector<double> secs, cpu, rss;
  int failed = 0;
  for (long long r = 0; r < runs; ++r) {
    const dp::bench::AnchorRun res = dp::bench::run_torch_server(script, world);
    std::printf(
        "run torch-server ranks=%d seconds=%.3f server_cpu_s=%.2f server_rss_mib=%.1f "
        "failed=%d\n",
        world, res.seconds, res.server_cpu, static_cast<double>(res.server_rss_kib) / 1024,
        res.failures);
    std::fflush(stdout);
    secs.push_back(res.seconds);
    cpu.push_back(res.server_cpu);
    rss.push_back(static_cast<double>(res.server_rss_kib) / 1024);
    failed += res.failures;
  }
  std::printf(
      "median torch-server ranks=%d seconds=%.3f server_cpu_s=%.2f server_rss_mib=%.1f "
      "failed=%d\n",
      world, median(secs), median(cpu), median(rss), failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string daemon, torch_server, clock = "connect";
  long long world = 0, per_node = 8, runs = 3, procs = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    auto number = [&](long long lo, long long hi, long long& out) {
      auto n = dp::parse_whole_number(v, lo, hi);
      if (!n) {
        std::fprintf(stderr, "%s %s: %s\n", a.c_str(), v.c_str(), n.error().message.c_str());
        std::exit(2);
      }
      out = *n;
    };
    if (a == "--daemon") daemon = v;
    else if (a == "--torch-server") torch_server = v;
    else if (a == "--ranks") number(1, 1 << 20, world);
    else if (a == "--ranks-per-node") number(1, 4096, per_node);
    else if (a == "--agent-procs") number(1, 64, procs);
    else if (a == "--clock" && (v == "connect" || v == "tasks")) clock = v;
    else if (a == "--runs") number(1, 100, runs);
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if ((daemon.empty() && torch_server.empty()) || world == 0) {
    std::fprintf(stderr,
                 "usage: dp-store-bench --daemon PATH --ranks N [--ranks-per-node R] [--runs K]\n"
                 "                      [--agent-procs P] [--clock connect|tasks]\n"
                 "       dp-store-bench --torch-server tcpstore_bench.py --ranks N [--runs K]\n");
    return 2;
  }
  if (!torch_server.empty()) return run_anchor(torch_server, static_cast<int>(world), runs);
  std::vector<double> secs, cpu, rss, per;
  int failed = 0;
  for (long long r = 0; r < runs; ++r) {
    const Result res = run_once(daemon, static_cast<int>(world), static_cast<int>(per_node),
                                static_cast<int>(procs), clock == "tasks");
    std::printf(
        "run torch-protocol ranks=%lld ranks_per_node=%lld agent_procs=%lld clock=%s seconds=%.3f "
        "daemon_requests_per_node=%.1f daemon_cpu_s=%.2f daemon_rss_mib=%.1f failed=%d\n",
        world, per_node, procs, clock.c_str(), res.seconds, res.requests_per_node, res.daemon_cpu,
        static_cast<double>(res.daemon_rss_kib) / 1024, res.failures);
    secs.push_back(res.seconds);
    cpu.push_back(res.daemon_cpu);
    rss.push_back(static_cast<double>(res.daemon_rss_kib) / 1024);
    per.push_back(res.requests_per_node);
    failed += res.failures;
  }
  std::printf(
      "median torch-protocol ranks=%lld ranks_per_node=%lld agent_procs=%lld clock=%s seconds=%.3f "
      "daemon_requests_per_node=%.1f daemon_cpu_s=%.2f daemon_rss_mib=%.1f failed=%d\n",
      world, per_node, procs, clock.c_str(), median(secs), median(per), median(cpu), median(rss),
      failed);
  return failed == 0 ? 0 : 1;
}
