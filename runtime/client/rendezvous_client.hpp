// C++ client of dp-rendezvousd (the per-step key/value + barrier + abort
// broker); libdp uses it for the NCCL unique ID and as Gloo's rendezvous
// store (the node agent takes only its address parsing and reply reader).
// Internal: not installed, not exported.
//
// Threading: one background I/O thread per client owns the socket, sends
// heartbeats, matches replies to callers by request id, and delivers the
// daemon's abort push to on_abort() even while no call is in flight (a rank
// blocked inside a Gloo collective must still learn that a peer died).
// All methods are safe to call from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client_options.hpp"
#include "dp/result.hpp"

namespace dp {

struct DaemonStats {
  uint64_t connections{0};
  uint64_t ranks_connected{0};
  uint64_t keys{0};
  uint64_t bytes_stored{0};
  uint64_t requests{0};
  std::string text;         // full human-readable dump
  std::string report_json;  // the step report: start-up timings, first failure, stragglers
};

class RendezvousClient {
 public:
  // Connects, answers the daemon's challenge (the secret never leaves this
  // process), starts the I/O thread. Retries with backoff until
  // connect_timeout (refused, evicted or over a limit: again); an
  // unauthorized/protocol reply is returned at once.
  static Result<std::unique_ptr<RendezvousClient>> connect(const ClientOptions& opts);
  // Parses "host:port" (DP_RDV_ADDR) into opts.host/opts.port.
  static Result<void> parse_address(std::string_view addr, ClientOptions& opts);

  virtual ~RendezvousClient() = default;  // says goodbye, joins the I/O thread

  virtual Result<void> set(std::string_view key, std::string_view value) = 0;
  // A key written exactly once (the NCCL unique ID): a node agent answers
  // later gets of it from its cache.
  virtual Result<void> set_once(std::string_view key, std::string_view value) = 0;
  // Blocks until the key exists or timeout (nullopt: the client's call_timeout).
  virtual Result<std::string> get(std::string_view key,
                                  std::optional<std::chrono::milliseconds> timeout = {}) = 0;
  virtual Result<int64_t> add(std::string_view key, int64_t delta) = 0;
  // Sets key to desired if its current value equals expected (absent key
  // matches an empty expected). Returns the value after the call.
  virtual Result<std::string> compare_and_set(std::string_view key, std::string_view expected,
                                              std::string_view desired) = 0;
  virtual Result<void> erase(std::string_view key) = 0;  // not_found if absent
  virtual Result<bool> exists(std::string_view key) = 0;
  virtual Result<void> wait(const std::vector<std::string>& keys,
                            std::optional<std::chrono::milliseconds> timeout = {}) = 0;
  // Every rank of the world (role == rank) must enter barrier `name`.
  virtual Result<void> barrier(std::string_view name,
                               std::optional<std::chrono::milliseconds> timeout = {}) = 0;
  // Aborts the job: every waiter and every later call of every peer fails
  // with Errc::aborted and this reason.
  virtual Result<void> abort(std::string_view reason) = 0;
  virtual Result<DaemonStats> stats() = 0;
  // Leave cleanly (no abort). Called by the destructor if not called before.
  virtual Result<void> goodbye() = 0;

  // Called once, from the I/O thread, when the daemon reports an abort or the
  // connection to the daemon is lost. Set before the first blocking call.
  virtual void on_abort(std::function<void(const Error&)> handler) = 0;
};

}  // namespace dp
