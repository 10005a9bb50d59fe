// Connections before their hello: the challenge, and who is evicted when
// strangers flood the port (hello_budget.hpp decides whom).
#include <algorithm>
#include <cstdio>

#include "broker.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace dp::daemon {
namespace {

constexpr auto kEvictionLogEvery = std::chrono::seconds(1);

std::string source_text(const std::string& source) {
  return source.empty() ? std::string("an unknown address") : source;
}

}  // namespace

void Broker::on_connect(ConnId conn, Clock::time_point now, const std::string& source) {
  auto nonce = step_.cfg.make_nonce();
  if (!nonce) {
    std::fprintf(stderr, "dp-rendezvousd: %s\n", nonce.error().message.c_str());
    return reject_and_close(conn, 0, rdv::to_wire(nonce.error().code), nonce.error().message);
  }
  Peer p;
  p.connected_at = now;
  p.nonce = std::move(*nonce);
  step_.peers.emplace(conn, p);
  ++step_.count.accepted;
  // An unknown source (tests, the fuzzer) is held to the whole budget only.
  step_.hello_budget.add(conn, source);
  proto::Response challenge;
  challenge.set_challenge(p.nonce);
  challenge.set_protocol_version(rdv::protocol_range().newest);
  step_.out.send(conn, challenge);
  // The budget grows by the nodes (or ranks) still expected to say hello.
  const int expected = step_.cfg.limits.nodes > 0 ? step_.cfg.limits.nodes : step_.cfg.world_size;
  const int budget =
      step_.cfg.limits.max_unauthenticated + std::max(0, expected - step_.count.rank_peers);
  while (auto victim = step_.hello_budget.next_eviction(budget)) evict_before_hello(*victim, now);
}

// Room for every rank still to come (a whole step starts at once, and each
// connection waits a round trip for its hello) plus a small budget for the rest.
void Broker::evict_before_hello(ConnId conn, Clock::time_point now) {
  const std::string source = step_.hello_budget.source_of(conn);
  const int held = step_.hello_budget.count(source);
  const std::string what =
      std::to_string(held) + " connections without hello from " + source_text(source);
  ++step_.count.evicted;
  ++evictions_unlogged_;
  // A flood evicts thousands a second: one line per second says how many.
  if (now - eviction_logged_ >= kEvictionLogEvery) {
    step_.log("evicted " + std::to_string(evictions_unlogged_) +
              " connection(s) before their hello; the last: " + what +
              (step_.hello_budget.is_step_node(source) ? " (a node of this step)" : ""));
    eviction_logged_ = now;
    evictions_unlogged_ = 0;
  }
  reject_and_close(conn, 0, proto::LIMIT,
                   "evicted before its hello: " + what + " (dp-rendezvousd --max-unauthenticated " +
                       std::to_string(step_.cfg.limits.max_unauthenticated) +
                       "); closing the oldest");
}

}  // namespace dp::daemon
