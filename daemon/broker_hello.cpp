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
  auto nonce = cfg_.make_nonce();
  if (!nonce) {
    std::fprintf(stderr, "dp-rendezvousd: %s\n", nonce.error().message.c_str());
    return reject_and_close(conn, 0, rdv::to_wire(nonce.error().code), nonce.error().message);
  }
  Peer p;
  p.connected_at = now;
  p.nonce = std::move(*nonce);
  peers_.emplace(conn, p);
  ++accepted_;
  // An unknown source (tests, the fuzzer) is held to the whole budget only.
  hello_budget_.add(conn, source);
  proto::Response challenge;
  challenge.set_challenge(p.nonce);
  challenge.set_protocol_version(rdv::protocol_range().newest);
  out_.send(conn, challenge);
  // The budget grows by the nodes (or ranks) still expected to say hello.
  const int expected = cfg_.limits.nodes > 0 ? cfg_.limits.nodes : cfg_.world_size;
  const int budget = cfg_.limits.max_unauthenticated + std::max(0, expected - rank_peers_);
  while (auto victim = hello_budget_.next_eviction(budget)) evict_before_hello(*victim, now);
}

// Room for every rank still to come (a whole step starts at once, and each
// connection waits a round trip for its hello) plus a small budget for the rest.
void Broker::evict_before_hello(ConnId conn, Clock::time_point now) {
  const std::string source = hello_budget_.source_of(conn);
  const int held = hello_budget_.count(source);
  const std::string what =
      std::to_string(held) + " connections without hello from " + source_text(source);
  ++evicted_;
  ++evictions_unlogged_;
  // A flood evicts thousands a second: one line per second says how many.
  if (now - eviction_logged_ >= kEvictionLogEvery) {
    std::fprintf(stderr,
                 "dp-rendezvousd: job %s step %s: evicted %llu connection(s) before their hello; "
                 "the last: %s%s\n",
                 cfg_.job_id.c_str(), cfg_.step_id.c_str(),
                 static_cast<unsigned long long>(evictions_unlogged_), what.c_str(),
                 hello_budget_.is_step_node(source) ? " (a node of this step)" : "");
    eviction_logged_ = now;
    evictions_unlogged_ = 0;
  }
  reject_and_close(conn, 0, proto::LIMIT,
                   "evicted before its hello: " + what + " (dp-rendezvousd --max-unauthenticated " +
                       std::to_string(cfg_.limits.max_unauthenticated) + "); closing the oldest");
}

}  // namespace dp::daemon
