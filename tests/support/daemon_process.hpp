// Test helpers: the real dp-rendezvousd binary as a child process, and a raw
// TCP connection that speaks frames by hand (for bad-input tests).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "rendezvous_client.hpp"

namespace dp::test {

inline constexpr uint32_t kProtocol = 2;
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

}  // namespace dp::test
