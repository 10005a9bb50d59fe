#include "kv_store.hpp"

#include "broker.hpp"

namespace dp::daemon {

std::string printable(std::string_view text, size_t limit) {
  std::string s;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    s += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  return s;
}

std::string shown(std::string_view key) {
  return "'" + printable(key, 64) + (key.size() > 64 ? "...'" : "'");
}

Result<void> KvStore::check_key(std::string_view key) const {
  if (key.size() > limits_.max_key_bytes) {
    return make_error(Errc::limit, "key of " + std::to_string(key.size()) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(limits_.max_key_bytes) +
                                       " bytes (dp-rendezvousd --max-key-bytes)");
  }
  return {};
}

Result<void> KvStore::put(const std::string& key, const std::string& value, bool once) {
  auto it = map_.find(key);
  if (it != map_.end() && (once || it->second.once)) {
    // Write-once: agents serve cached copies, so the value may never change.
    if (it->second.value != value) {
      return make_error(Errc::conflict,
                        "key " + shown(key) + " is write-once and already holds another value");
    }
    it->second.once = true;
    return {};
  }
  if (value.size() > limits_.max_value_bytes) {
    return make_error(Errc::limit, "value of " + std::to_string(value.size()) + " bytes for key " +
                                       shown(key) + " exceeds the limit of " +
                                       std::to_string(limits_.max_value_bytes) +
                                       " bytes (dp-rendezvousd --max-value-bytes)");
  }
  const uint64_t old_bytes = it == map_.end() ? 0 : key.size() + it->second.value.size();
  const uint64_t new_total = bytes_ - old_bytes + key.size() + value.size();
  if (new_total > limits_.max_total_bytes) {
    return make_error(Errc::limit, "storing key " + shown(key) +
                                       " would exceed the step's limit of " +
                                       std::to_string(limits_.max_total_bytes) +
                                       " stored bytes (dp-rendezvousd --max-total-bytes)");
  }
  bytes_ = new_total;
  if (it == map_.end()) {
    map_.emplace(key, Entry{value, once});
  } else {
    it->second = Entry{value, once};
  }
  return {};
}

const KvStore::Entry* KvStore::entry(const std::string& key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

Result<void> KvStore::erase(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return make_error(Errc::not_found, "key " + shown(key) + " does not exist");
  if (it->second.once)
    return make_error(Errc::conflict, "key " + shown(key) + " is write-once; it cannot be erased");
  bytes_ -= it->first.size() + it->second.value.size();
  map_.erase(it);
  return {};
}

}  // namespace dp::daemon
