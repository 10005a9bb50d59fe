// Test helpers: the real dp-rendezvousd binary as a child process, and a raw
// TCP connection that speaks frames by hand (for bad-input tests).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "frame_codec.hpp"
#include "protocol_version.hpp"
#include "rendezvous_client.hpp"

namespace dp::test {

inline const uint32_t kProtocol = rdv::protocol_range().newest;
inline const std::string kSecret =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

class DaemonProcess {
 public:
  // Starts dp-rendezvousd on 127.0.0.1 and waits for its READY line.
  explicit DaemonProcess(int world_size, std::vector<std::string> extra_args = {},
                         std::string secret = kSecret);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  bool ready() const { return port_ != 0; }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& first_line() const { return line_; }
  // Waits for the child to exit; its exit status, or nullopt at the deadline.
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  bool running();
  std::string log() const;  // everything it wrote to stderr

  ClientOptions client_options(int rank, int world_size, PeerRole role = PeerRole::rank) const;

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string line_;
  std::string log_path_;
  bool reaped_ = false;
};

// Runs the daemon binary to completion with args and stdin text; returns
// (exit status, stdout).
// nofile: the RLIMIT_NOFILE it starts with.
std::pair<int, std::string> run_daemon_once(const std::vector<std::string>& args,
                                            const std::string& stdin_text,
                                            const std::optional<rlimit>& nofile = {});

class RawConn {
 public:
  explicit RawConn(uint16_t port);
  ~RawConn();
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;
  bool connected() const { return fd_ >= 0; }
  bool send_bytes(const std::string& bytes);
  bool send_request(const proto::Request& r);
  // Answers this connection's challenge with the proof for secret.
  bool hello(const std::string& secret = kSecret, int rank = -1,
             proto::Role role = proto::ROLE_AGENT, uint32_t version = kProtocol);
  // Answers the challenge as a node agent (ROLE_NODE) speaking for ranks.
  bool node_hello(const std::vector<int32_t>& ranks, const std::string& host,
                  const std::string& secret = kSecret);
  const std::string& nonce() const { return nonce_; }
  // Next response frame, or nullopt on close/deadline.
  std::optional<proto::Response> read_response(
      std::chrono::milliseconds limit = std::chrono::milliseconds(5'000));
  // True when the daemon closed the connection before the deadline.
  bool closed_by_peer(std::chrono::milliseconds limit = std::chrono::milliseconds(5'000));

 private:
  int fd_ = -1;
  std::string buf_;
  std::string nonce_;                     // this connection's challenge
  std::optional<proto::Response> early_;  // a first frame that was no challenge
};

// A hello answering nonce with the proof for secret (world size 0: unchecked).
proto::Request hello_request(const std::string& nonce, const std::string& secret, int rank,
                             proto::Role role, const std::string& host,
                             uint32_t version = kProtocol);

std::string frame_of(const proto::Request& r);

// Polls pred until it holds or the limit passes (never a bare sleep).
bool poll_until(const std::function<bool()>& pred, std::chrono::milliseconds limit);

// A connected client, or nullptr after reporting why as a test failure.
std::unique_ptr<RendezvousClient> must_connect(const ClientOptions& o);
// Rank `rank` of d's step connected (d must be ready), or nullptr likewise.
std::unique_ptr<RendezvousClient> connect_rank(const DaemonProcess& d, int rank, int world);

// How a call failed, to compare in one check; nullopt when it succeeded.
template <class T>
std::optional<Errc> error_code(const Result<T>& r) {
  if (r.ok()) return std::nullopt;
  return r.error().code;
}

// Checks the daemon's stats dump: it holds every line part in `has` and none
// in `lacks` (each failure shows the dump).
void expect_stats(RendezvousClient& c, const std::vector<std::string>& has,
                  const std::vector<std::string>& lacks = {});

// Polls c's daemon until it holds a pending call: another thread's call is
// then certainly waiting in the daemon, not still on its way.
bool daemon_holds_a_pending_call(
    RendezvousClient& c, std::chrono::milliseconds limit = std::chrono::milliseconds(5'000));

// A call that blocks in its own thread until the daemon answers: the error it
// ended with (none: it succeeded) and when, read after join().
class PendingCall {
 public:
  template <class Call>
  explicit PendingCall(Call call)
      : thread_([this, call] {
          auto r = call();
          failed_at = std::chrono::steady_clock::now();
          if (!r.ok()) failed = r.error();
        }) {}
  ~PendingCall() { join(); }
  PendingCall(const PendingCall&) = delete;
  PendingCall& operator=(const PendingCall&) = delete;
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::optional<Error> failed;
  std::chrono::steady_clock::time_point failed_at;

 private:
  std::thread thread_;
};

}  // namespace dp::test
