// The step's key/value store with its byte accounting and limits. Pure data:
// refusals come back as values (Errc::limit, with a message naming the option).
// Two key spaces share the step's limits (proto::Space): the step's own keys
// and PyTorch's TCPStore keys (with its queues), which the node agents serve.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "dp/shown_value.hpp"

namespace dp::daemon {

struct BrokerLimits;

class KvStore {
 public:
  using Space = proto::Space;
  explicit KvStore(const BrokerLimits& limits) : limits_(limits) {}
  const BrokerLimits& limits() const { return limits_; }

  Result<void> check_key(std::string_view key) const;
  // Stores value under key unless a value or the step's total would exceed its
  // limit, or the key is write-once (Set.once) and holds another value
  // (Errc::conflict). once: the key becomes write-once.
  Result<void> put(Space s, const std::string& key, const std::string& value, bool once = false);
  // The value grows by `more` (a missing key is created), within the limits.
  Result<void> append(Space s, const std::string& key, const std::string& more);
  // A value, and whether it is write-once (node agents cache those: a get
  // answers flag = true for them). One lookup for both: gets are the hot path.
  struct Entry {
    std::string value;
    bool once = false;
  };
  const Entry* entry(Space s, const std::string& key) const;
  const std::string* find(Space s, const std::string& key) const {
    const Entry* e = entry(s, key);
    return e ? &e->value : nullptr;
  }
  // A key exists, or (PyTorch's rule) a queue of that name holds an item.
  bool contains(Space s, const std::string& key) const;
  // Errc::not_found, or Errc::conflict for a write-once key.
  Result<void> erase(Space s, const std::string& key);
  // Keys of one space (PyTorch's GETNUMKEYS), and of both.
  size_t keys(Space s) const { return maps_[index(s)].size(); }
  size_t keys() const { return maps_[0].size() + maps_[1].size(); }
  void reserve(size_t keys) { maps_[0].reserve(keys); }
  uint64_t bytes() const { return bytes_; }

  // The step restarts in place: its programs' keys go (PyTorch's queues
  // too), write-once ones included; `keep` (the agents' own exchange) stays.
  void clear_programs(const std::string& keep);

  // PyTorch's queues (2.8's QUEUE_PUSH/POP/LEN), SPACE_TORCH: items in order.
  Result<void> push(const std::string& key, const std::string& value);
  std::optional<std::string> pop(const std::string& key);
  size_t queue_length(const std::string& key) const;

 private:
  static size_t index(Space s) { return s == proto::SPACE_TORCH ? 1 : 0; }
  Result<void> fits(const std::string& key, uint64_t value_bytes, uint64_t old_bytes) const;

  const BrokerLimits& limits_;
  std::array<std::unordered_map<std::string, Entry>, 2> maps_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  uint64_t bytes_ = 0;
};

}  // namespace dp::daemon
