// A reference store: the semantics of PyTorch's own TCPStore server in
// memory, requests in, the bytes it would send (to which connection) out.
// Tests and the fuzzer check slurm-dp's folded, per-node answers against it:
// no answer may differ from one PyTorch's own server could have given. Not a
// server (no sockets, no time): a WAIT's answer is a delivery to the waiting
// connection when a later request sets its last key.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dp/torchstore/request.hpp"

namespace dp::torchstore {

using ConnId = uint64_t;

// Where PyTorch's own servers answer differently, which one to answer as.
enum class ServerKind : uint8_t {
  // The thread of TCPStore itself (1.13, 2.0) and TCPStoreBackend (2.2+ with
  // USE_LIBUV=0, and every Debian build): a GET or MULTI_GET of a missing key
  // closes the connection; COMPARE_SET wakes no waiter.
  classic,
  // TCPStoreLibUvBackend (2.4+'s default): a missing key reads as ""; every
  // COMPARE_SET wakes the key's waiters; a non-empty queue counts as an
  // existing key for CHECK and WAIT.
  libuv,
};

struct Delivery {
  ConnId conn;
  std::string bytes;
  bool operator==(const Delivery&) const = default;
};

struct Outcome {
  std::vector<Delivery> replies;     // in the order the server sends them
  std::optional<std::string> close;  // the server closes the requester's connection: why
};

class StoreModel {
 public:
  explicit StoreModel(ServerKind kind = ServerKind::classic) : kind_(kind) {}

  Outcome apply(ConnId conn, const Request& r);
  // The client went away: its waits and watches go with it.
  void disconnect(ConnId conn);

  std::optional<std::string> value(std::string_view key) const;
  size_t num_keys() const { return kv_.size(); }
  size_t queue_length(std::string_view key) const;
  bool waiting(ConnId conn) const { return awaited_.count(conn) > 0; }

 private:
  void set(const std::string& key, std::string value, Outcome& out);
  void add(const Request& r, ConnId conn, Outcome& out);
  void compare_set(const Request& r, ConnId conn, Outcome& out);
  void get(const Request& r, ConnId conn, Outcome& out);
  void wait(const Request& r, ConnId conn, Outcome& out);
  void delete_key(const Request& r, ConnId conn, Outcome& out);
  void queue_push(const Request& r, Outcome& out);
  void queue_pop(const Request& r, ConnId conn, Outcome& out);
  void disconnect_waits(ConnId conn);
  bool present(const std::string& key) const;
  void wake(const std::string& key, Outcome& out);
  void wake_one(const std::string& key, Outcome& out);
  void watched(const std::string& key, std::optional<std::string> old_value, const std::string* now,
               Outcome& out);

  ServerKind kind_;
  std::map<std::string, std::string> kv_;
  std::map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, std::vector<ConnId>> waiters_;  // key -> waiting connections
  std::unordered_map<ConnId, size_t> awaited_;  // connection -> keys it still waits for
  std::unordered_map<std::string, std::vector<ConnId>> watchers_;  // legacy WATCH_KEY
};

// What std::stoll, which PyTorch's ADD applies to the stored value, makes of
// it: leading white space, a sign, at least one decimal digit, the rest
// ignored; nullopt where it throws (no digits, out of range).
std::optional<int64_t> parse_like_stoll(std::string_view text);

}  // namespace dp::torchstore
