// The step's key/value store with its byte accounting and limits. Pure data:
// refusals come back as values (Errc::limit, with a message naming the option).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dp/result.hpp"

namespace dp::daemon {

struct BrokerLimits;

class KvStore {
 public:
  explicit KvStore(const BrokerLimits& limits) : limits_(limits) {}

  Result<void> check_key(std::string_view key) const;
  // Stores value under key unless a value or the step's total would exceed its
  // limit, or the key is write-once (Set.once) and holds another value
  // (Errc::conflict). once: the key becomes write-once.
  Result<void> put(const std::string& key, const std::string& value, bool once = false);
  // A value, and whether it is write-once (node agents cache those: a get
  // answers flag = true for them). One lookup for both: gets are the hot path.
  struct Entry {
    std::string value;
    bool once = false;
  };
  const Entry* entry(const std::string& key) const;
  const std::string* find(const std::string& key) const {
    const Entry* e = entry(key);
    return e ? &e->value : nullptr;
  }
  bool contains(const std::string& key) const { return map_.count(key) != 0; }
  // Errc::not_found, or Errc::conflict for a write-once key.
  Result<void> erase(const std::string& key);
  size_t keys() const { return map_.size(); }
  void reserve(size_t keys) { map_.reserve(keys); }
  uint64_t bytes() const { return bytes_; }

 private:
  const BrokerLimits& limits_;
  std::unordered_map<std::string, Entry> map_;
  uint64_t bytes_ = 0;
};

// Peer-supplied text goes into logs and other peers' errors: printable ASCII only.
std::string printable(std::string_view text, size_t limit);
// Keys are bytes: show them printable and short in messages.
std::string shown(std::string_view key);

}  // namespace dp::daemon
