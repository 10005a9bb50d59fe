// The daemon's part of a restart in place at scale: 64 + 2 simulated node
// agents of 8 ranks each (the Broker without sockets, as its unit tests
// drive it), one node lost. Times, median of several repetitions: the
// decision and the STOP to every node; the STOP answers until START went to
// every node (the programs' keys cleared, every rank re-seated, the spare
// given the lost node's ranks); the START answers until the step runs again.
// The network's round trips and each node's program stop (kill_grace) come
// on top; bench/restart/run.sh measures a real one end to end.
//   dp-restart-bench [NODES SPARES RANKS_PER_NODE REPS]   (default 64 2 8 21)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "broker.hpp"
#include "dp/params.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace {

using dp::daemon::Clock;
using dp::daemon::ConnId;

struct Counter : dp::daemon::Outbox {
  size_t sends = 0;
  void send(ConnId, const dp::proto::Response&) override { ++sends; }
  void close(ConnId) override {}
};

const std::string kSecret(64, 'a');
const std::string kNonce(dp::rdv::kNonceBytes, 'n');

std::string hello(int node, const std::vector<int32_t>& ranks) {
  dp::proto::Request r;
  r.set_id(1);
  auto* h = r.mutable_hello();
  h->set_protocol_version(dp::rdv::protocol_range().newest);
  h->set_role(dp::proto::ROLE_NODE);
  h->set_rank(node);
  h->set_host("n" + std::to_string(node));
  for (int32_t x : ranks) h->add_node_ranks(x);
  h->set_proof(dp::rdv::hello_proof(kSecret, kNonce, dp::proto::ROLE_NODE, node, 0, h->host(),
                                    std::span<const int32_t>(ranks)));
  return r.SerializeAsString();
}

std::string ready(uint64_t generation, dp::proto::Restart::Phase phase) {
  dp::proto::Request r;
  r.mutable_restart_ready()->set_generation(generation);
  r.mutable_restart_ready()->set_phase(phase);
  return r.SerializeAsString();
}

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Times {
  double stop_us, start_us, running_us;
  bool restarted;
};

Times one_restart(int nodes, int spares, int per_node) {
  const int all = nodes + spares;
  dp::daemon::BrokerConfig c;
  c.world_size = nodes * per_node;
  c.secret = kSecret;
  c.job_id = "1";
  c.step_id = "0";
  c.limits.nodes = all;
  c.limits.spares = spares;
  c.limits.tasks_per_node = per_node;
  c.limits.max_restarts = 3;
  c.make_nonce = [] { return kNonce; };
  Counter out;
  const auto t = Clock::now();
  dp::daemon::Broker b(c, out, t);
  for (int n = 0; n < all; ++n) {
    std::vector<int32_t> ranks;
    for (int r = 0; n < nodes && r < per_node; ++r) ranks.push_back(n * per_node + r);
    b.on_connect(static_cast<ConnId>(n + 1), t);
    b.on_frame(static_cast<ConnId>(n + 1), hello(n, ranks), t);
  }
  // Every rank's PyTorch store keys, to be cleared.
  for (int r = 0; r < c.world_size; ++r) {
    dp::proto::Request set;
    set.set_id(2);
    set.set_space(dp::proto::SPACE_TORCH);
    set.mutable_set()->set_key("/worker/rank_" + std::to_string(r));
    set.mutable_set()->set_value(std::string(64, 'v'));
    b.on_frame(static_cast<ConnId>(r / per_node + 1), set.SerializeAsString(), t);
  }
  const ConnId lost = static_cast<ConnId>(std::min(nodes, 11));  // n10, or the last node
  const auto t0 = Clock::now();
  b.on_disconnect(lost, t0);
  const auto t1 = Clock::now();
  for (int n = 0; n < all; ++n)
    if (static_cast<ConnId>(n + 1) != lost)
      b.on_frame(static_cast<ConnId>(n + 1), ready(1, dp::proto::Restart::STOP), t1);
  // The lost node's link closed: its programs are known dead a keeper's
  // reaction later (fencing), and the tick past it sends START.
  const auto fenced = t1 + std::chrono::seconds(2);
  b.on_tick(fenced);
  const auto t2 = Clock::now();
  for (int n = 0; n < all; ++n)
    if (static_cast<ConnId>(n + 1) != lost)
      b.on_frame(static_cast<ConnId>(n + 1), ready(1, dp::proto::Restart::START), fenced);
  const auto t3 = Clock::now();
  // Restarted: the programs' keys cleared at START, the step not ended.
  const bool restarted = !b.aborted() && b.stats().keys() <= 1;
  return {us(t1 - t0), us(t2 - t1), us(t3 - t2), restarted};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  long long arg[4] = {64, 2, 8, 21};
  for (int i = 1; i < argc && i <= 4; ++i) {
    auto n = dp::parse_whole_number(argv[i], 1, 1 << 16);
    if (!n) {
      std::fprintf(stderr, "usage: dp-restart-bench [NODES SPARES RANKS_PER_NODE REPS]: %s\n",
                   n.error().message.c_str());
      return 2;
    }
    arg[i - 1] = *n;
  }
  const int nodes = static_cast<int>(arg[0]), spares = static_cast<int>(arg[1]);
  const int per_node = static_cast<int>(arg[2]), reps = static_cast<int>(arg[3]);
  std::vector<double> stop, start, running;
  for (int r = 0; r < reps; ++r) {
    const Times t = one_restart(nodes, spares, per_node);
    if (!t.restarted) {
      std::fprintf(stderr,
                   "dp-restart-bench: run %d did not restart (no START, or the step ended)\n",
                   r + 1);
      return 1;
    }
    stop.push_back(t.stop_us);
    start.push_back(t.start_us);
    running.push_back(t.running_us);
  }
  std::printf(
      "restart in place, daemon's part: %d + %d nodes x %d ranks, median of %d: decide + STOP to "
      "every node %.0f us; STOP answers to START to every node (keys cleared, ranks re-seated) "
      "%.0f us; START answers to running %.0f us\n",
      nodes, spares, per_node, reps, median(stop), median(start), median(running));
  return 0;
}
