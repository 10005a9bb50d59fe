// dp-rdv-probe: one task of an e2e step. Reads DP_RDV_ADDR, DP_RDV_SECRET,
// RANK and WORLD_SIZE, exchanges a 128-byte ID through the step's daemon
// (rank 0 publishes, everyone fetches), passes a barrier, and then either
// says goodbye (mode "exchange") or waits for a key nobody sets (mode
// "hold") until the daemon reports an abort.
//
// Output, one line each: "probe rank R: id ok <first 16 hex>" and, on an
// abort, "probe rank R: aborted at <unix ms>: <message>" (exit 3), on any
// other error "probe rank R: failed at <unix ms>: error <code>: <message>".
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dp/env_names.hpp"
#include "rendezvous_client.hpp"

namespace {

const char* env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

long long unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int fail(int rank, const dp::Error& e) {
  if (e.code == dp::Errc::aborted) {
    std::printf("probe rank %d: aborted at %lld: %s\n", rank, unix_ms(), e.message.c_str());
    std::fflush(stdout);
    return 3;
  }
  std::printf("probe rank %d: failed at %lld: error %s: %s\n", rank, unix_ms(),
              dp::errc_name(e.code), e.message.c_str());
  std::fflush(stdout);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "exchange";
  if (mode != "exchange" && mode != "hold") {
    std::fprintf(stderr, "usage: dp-rdv-probe [exchange|hold]\n");
    return 2;
  }
  dp::ClientOptions o;
  if (auto r = dp::RendezvousClient::parse_address(env_or_empty(dp::env::kRdvAddr), o); !r) {
    std::fprintf(stderr, "dp-rdv-probe: %s\n", r.error().message.c_str());
    return 2;
  }
  o.secret = env_or_empty(dp::env::kRdvSecret);
  o.agent_socket = env_or_empty(dp::env::kAgentSocket);  // the node agent, as libdp does
  o.rank = std::atoi(env_or_empty(dp::env::kRank));
  o.world_size = std::atoi(env_or_empty(dp::env::kWorldSize));
  o.call_timeout = std::chrono::milliseconds(60'000);
  const int rank = o.rank;

  auto client = dp::RendezvousClient::connect(o);
  if (!client) return fail(rank, client.error());
  auto& c = **client;

  std::string id(128, '\0');
  if (rank == 0) {
    if (getrandom(id.data(), id.size(), 0) != static_cast<ssize_t>(id.size())) return 2;
    if (auto r = c.set_once("probe/id", id); !r) return fail(rank, r.error());
  }
  auto got = c.get("probe/id");
  if (!got) return fail(rank, got.error());
  if (got->size() != 128) {
    std::printf("probe rank %d: id has %zu bytes, expected 128\n", rank, got->size());
    return 2;
  }
  char hex[17];
  for (int i = 0; i < 8; ++i)
    std::snprintf(hex + 2 * i, 3, "%02x", static_cast<unsigned char>((*got)[i]));
  if (auto r = c.barrier("probe/after-id"); !r) return fail(rank, r.error());
  std::printf("probe rank %d: id ok %s\n", rank, hex);
  std::fflush(stdout);

  if (mode == "hold") {
    std::printf("probe rank %d: holding pid %d\n", rank, static_cast<int>(getpid()));
    std::fflush(stdout);
    // Nobody sets this key: only an abort (or the timeout) ends the wait.
    auto r = c.get("probe/never", std::chrono::milliseconds(120'000));
    if (!r) return fail(rank, r.error());
    return 0;
  }
  if (auto r = c.goodbye(); !r) return fail(rank, r.error());
  return 0;
}
