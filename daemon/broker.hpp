// The rendezvous broker: key/value store, blocking gets, waits, named
// barriers, abort and liveness of one step's ranks. Pure logic with no
// sockets: the server feeds it frames and ticks, it answers through Outbox.
// This is what the unit tests and the fuzzer drive directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "startup_phases.hpp"
#include "step_report.hpp"

namespace dp::daemon {

using Clock = std::chrono::steady_clock;
using ConnId = uint64_t;

struct BrokerLimits {
  uint32_t max_key_bytes = 4096;
  uint32_t max_value_bytes = 1u << 20;
  uint64_t max_total_bytes = 128ull << 20;  // keys + values of the whole step
  std::chrono::milliseconds hello_timeout{5'000};
  std::chrono::milliseconds heartbeat_timeout{4'000};  // ranks only; + the 100 ms tick stays within 5 s
  // Others wait this long in a collective a live rank does not enter: it hangs (0: off).
  std::chrono::milliseconds hang_timeout{120'000};
};

struct BrokerConfig {
  int world_size = 1;
  std::string secret;  // hex, as the tasks get it; never logged
  std::string job_id;
  std::string step_id;
  BrokerLimits limits;
};

// Where the broker's answers go (the server's sockets, or a test recorder).
class Outbox {
 public:
  virtual ~Outbox() = default;
  virtual void send(ConnId conn, const proto::Response& r) = 0;
  // Flush what was sent, then close; the broker has already forgotten conn.
  virtual void close(ConnId conn) = 0;
};

class Broker {
 public:
  Broker(BrokerConfig cfg, Outbox& out, Clock::time_point now);

  void on_connect(ConnId conn, Clock::time_point now);
  // One received frame body. Malformed input gets an error reply; the
  // connection is closed when its framing or authentication cannot be trusted.
  void on_frame(ConnId conn, std::string_view payload, Clock::time_point now);
  // The frame announced more bytes than the limit allows.
  void on_oversized_frame(ConnId conn, uint32_t announced, uint32_t limit);
  // The socket closed or failed (not after close() from the broker).
  void on_disconnect(ConnId conn, Clock::time_point now);
  // Deadlines: blocking calls, hello, heartbeats. Call a few times a second.
  void on_tick(Clock::time_point now);

  uint32_t max_frame_bytes(ConnId conn) const;
  bool knows(ConnId conn) const { return peers_.count(conn) != 0; }
  size_t connections() const { return peers_.size(); }
  // Every rank of the world said goodbye and nobody is connected.
  bool finished() const;
  bool aborted() const { return aborted_; }
  proto::Stats stats() const;
  std::string startup_summary() const { return phases_.summary(); }
  // The step report (issue 16): JSON, srun's start-up line, the first failure.
  const StepReport& report() const { return report_; }
  std::string report_json(Clock::time_point now) const;
  std::string startup_line() const { return report_.startup_line(phases_); }

 private:
  enum class PeerState : uint8_t { awaiting_hello, ready };
  struct Peer {
    PeerState state = PeerState::awaiting_hello;
    proto::Role role = proto::ROLE_AGENT;
    int rank = -1;
    std::string host;
    Clock::time_point connected_at;
    Clock::time_point last_seen;
    std::vector<uint64_t> waiters;  // pending blocking calls of this peer
  };
  enum class WaitKind : uint8_t { get, wait, barrier };
  struct Waiter {
    ConnId conn = 0;
    uint64_t request_id = 0;
    WaitKind kind = WaitKind::get;
    std::vector<std::string> keys;  // get: one key; wait: all keys; barrier: the name
    bool has_deadline = false;
    Clock::time_point deadline;
    std::chrono::milliseconds timeout{0};
  };
  struct BarrierState {
    std::vector<char> arrived;  // by rank
    int count = 0;
    std::vector<uint64_t> waiters;
  };

  void handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h, Clock::time_point now);
  void handle_request(ConnId conn, Peer& p, const proto::Request& req, Clock::time_point now);
  void reply_ok(ConnId conn, uint64_t id);
  void reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message);
  void reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message);
  bool check_key(ConnId conn, uint64_t id, const std::string& key);
  bool store_value(ConnId conn, uint64_t id, const std::string& key, const std::string& value);
  void key_changed(const std::string& key);
  // timeout_ms 0: no deadline.
  uint64_t add_waiter(ConnId conn, uint64_t request_id, WaitKind kind, std::vector<std::string> keys,
                      uint32_t timeout_ms, Clock::time_point now);
  void finish_waiter(uint64_t wid);
  void drop_waiter(uint64_t wid);
  void fail_waiter(uint64_t wid, proto::Code code, std::string message);
  void forget_peer(ConnId conn);
  void abort_job(std::string reason);
  // The same, naming the first failure for the step report (rank -1: an agent).
  void abort_job(const Peer& who, FailureHow how, std::string what);
  std::string describe_peer(const Peer& p) const;
  std::string missing_ranks(const BarrierState& b) const;

  BrokerConfig cfg_;
  Outbox& out_;
  StartupPhases phases_;
  StepReport report_;

  std::unordered_map<ConnId, Peer> peers_;
  std::vector<ConnId> rank_conn_;   // rank -> live connection (0: none)
  std::vector<char> rank_hello_;    // rank ever said hello
  std::vector<char> rank_fetched_;  // rank ever completed a get
  std::vector<char> rank_goodbye_;
  int ranks_connected_ = 0, ranks_seen_ = 0, ranks_fetched_ = 0, ranks_goodbye_ = 0;

  std::unordered_map<std::string, std::string> store_;
  uint64_t bytes_stored_ = 0;

  uint64_t next_waiter_ = 1;
  std::unordered_map<uint64_t, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<uint64_t>> key_waiters_;
  std::multimap<Clock::time_point, uint64_t> deadlines_;
  std::unordered_map<std::string, BarrierState> barriers_;

  bool aborted_ = false;
  int hang_rank_ = -1;  // the abort names this rank as hanging
  std::string abort_reason_;

  uint64_t requests_ = 0, accepted_ = 0, rejected_auth_ = 0, protocol_errors_ = 0,
           limit_errors_ = 0, heartbeats_ = 0;
};

// Constant-time comparison: the time taken does not depend on where a and b differ.
bool secrets_equal(std::string_view a, std::string_view b) noexcept;

}  // namespace dp::daemon
