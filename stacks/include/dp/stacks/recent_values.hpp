// What a reader learned of things it meets again and again, by a key that
// changes whenever the thing does: the newest `kEntries` kept, the oldest
// dropped first; keeping a key again replaces its value. Thread-safe: the node agent reads its
// ranks on threads.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace dp::stacks {

template <typename Value, size_t kEntries>
class RecentValues {
 public:
  std::optional<Value> find(const std::string& key) const {
    std::lock_guard lock(mu_);
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
      if (it->first == key) return it->second;
    return std::nullopt;
  }
  void keep(const std::string& key, const Value& value) {
    std::lock_guard lock(mu_);
    for (auto& [k, v] : entries_) {
      if (k == key) {
        v = value;
        return;
      }
    }
    entries_.emplace_back(key, value);
    if (entries_.size() > kEntries) entries_.pop_front();
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::pair<std::string, Value>> entries_;
};

}  // namespace dp::stacks
