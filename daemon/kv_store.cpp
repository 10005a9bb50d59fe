#include "kv_store.hpp"

#include "broker_limits.hpp"

namespace dp::daemon {

Result<void> KvStore::check_key(std::string_view key) const {
  if (key.size() > limits_.max_key_bytes) {
    return make_error(Errc::limit, "key of " + std::to_string(key.size()) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(limits_.max_key_bytes) +
                                       " bytes (dp-rendezvousd --max-key-bytes)");
  }
  return {};
}

Result<void> KvStore::fits(const std::string& key, uint64_t value_bytes, uint64_t old_bytes) const {
  if (value_bytes > limits_.max_value_bytes) {
    return make_error(Errc::limit, "value of " + std::to_string(value_bytes) + " bytes for key " +
                                       shown_key(key) + " exceeds the limit of " +
                                       std::to_string(limits_.max_value_bytes) +
                                       " bytes (dp-rendezvousd --max-value-bytes)");
  }
  if (bytes_ - old_bytes + key.size() + value_bytes > limits_.max_total_bytes) {
    return make_error(Errc::limit, "storing key " + shown_key(key) +
                                       " would exceed the step's limit of " +
                                       std::to_string(limits_.max_total_bytes) +
                                       " stored bytes (dp-rendezvousd --max-total-bytes)");
  }
  return {};
}

Result<void> KvStore::put(Space s, const std::string& key, const std::string& value, bool once) {
  auto& map = maps_[index(s)];
  auto it = map.find(key);
  if (it != map.end() && (once || it->second.once)) {
    // Write-once: agents serve cached copies, so the value may never change.
    if (it->second.value != value) {
      return make_error(Errc::conflict,
                        "key " + shown_key(key) + " is write-once and already holds another value");
    }
    it->second.once = true;
    return {};
  }
  const uint64_t old_bytes = it == map.end() ? 0 : key.size() + it->second.value.size();
  DP_TRY(fits(key, value.size(), old_bytes));
  bytes_ = bytes_ - old_bytes + key.size() + value.size();
  if (it == map.end()) {
    map.emplace(key, Entry{value, once});
  } else {
    it->second = Entry{value, once};
  }
  return {};
}

Result<void> KvStore::append(Space s, const std::string& key, const std::string& more) {
  auto& map = maps_[index(s)];
  auto it = map.find(key);
  if (it == map.end()) return put(s, key, more);
  if (it->second.once)
    return make_error(Errc::conflict, "key " + shown_key(key) + " is write-once; it cannot grow");
  const uint64_t old_bytes = key.size() + it->second.value.size();
  DP_TRY(fits(key, it->second.value.size() + more.size(), old_bytes));
  bytes_ += more.size();
  it->second.value += more;
  return {};
}

const KvStore::Entry* KvStore::entry(Space s, const std::string& key) const {
  const auto& map = maps_[index(s)];
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

bool KvStore::contains(Space s, const std::string& key) const {
  if (maps_[index(s)].count(key) != 0) return true;
  return s == proto::SPACE_TORCH && queue_length(key) > 0;
}

Result<void> KvStore::erase(Space s, const std::string& key) {
  auto& map = maps_[index(s)];
  auto it = map.find(key);
  if (it == map.end())
    return make_error(Errc::not_found, "key " + shown_key(key) + " does not exist");
  if (it->second.once)
    return make_error(Errc::conflict,
                      "key " + shown_key(key) + " is write-once; it cannot be erased");
  bytes_ -= it->first.size() + it->second.value.size();
  map.erase(it);
  return {};
}

void KvStore::clear_programs(const std::string& keep) {
  std::optional<Entry> kept;
  if (auto it = maps_[0].find(keep); it != maps_[0].end()) kept = it->second;
  for (auto& map : maps_) map.clear();
  queues_.clear();
  bytes_ = 0;
  if (!kept) return;
  bytes_ = keep.size() + kept->value.size();
  maps_[0].emplace(keep, std::move(*kept));
}

Result<void> KvStore::push(const std::string& key, const std::string& value) {
  DP_TRY(fits(key, value.size(), 0));
  queues_[key].push_back(value);
  bytes_ += key.size() + value.size();
  return {};
}

std::optional<std::string> KvStore::pop(const std::string& key) {
  auto it = queues_.find(key);
  if (it == queues_.end() || it->second.empty()) return std::nullopt;
  std::string v = std::move(it->second.front());
  it->second.pop_front();
  bytes_ -= key.size() + v.size();
  if (it->second.empty()) queues_.erase(it);
  return v;
}

size_t KvStore::queue_length(const std::string& key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : it->second.size();
}

}  // namespace dp::daemon
