#include "torchrun_launchers.hpp"

namespace dp::daemon {

void TorchrunLaunchers::note_write(int node, const std::string& key, const std::string* current,
                                   const std::string& desired) {
  // A node's launcher, once known, stays (torchrun restarts its workers, not
  // itself): the state is read only until then, not at each keep-alive (a
  // 1000-launcher state takes about a millisecond to read).
  if (node < 0 || known_.count(node) || !torchstore::is_rendezvous_state_key(key)) return;
  auto next = torchstore::read_rendezvous_state(desired);
  if (!next) return;
  torchstore::RendezvousState prev;
  if (current && key == last_key_ && *current == last_value_) {
    prev = std::move(last_);
  } else if (current) {
    auto was = torchstore::read_rendezvous_state(*current);
    if (was) prev = std::move(*was);
  }
  keys_.insert(key);
  for (const auto& l : torchstore::heartbeats_moved(prev, *next)) {
    if (node_of_.size() >= kMostLaunchers && !node_of_.count(l.name())) break;
    node_of_[l.name()] = node;
    known_.insert(node);
  }
  last_key_ = key;
  last_value_ = desired;
  last_ = std::move(*next);
}

std::vector<TorchrunLaunchers::Aged> TorchrunLaunchers::age_node(
    int node, const std::function<const std::string*(const std::string&)>& find) const {
  std::vector<Aged> out;
  for (const std::string& key : keys_) {
    const std::string* value = find(key);
    if (!value) continue;
    auto st = torchstore::read_rendezvous_state(*value);
    if (!st) continue;
    Aged a;
    a.key = key;
    for (const auto& l : st->launchers) {
      const auto it = node_of_.find(l.name());
      if (it != node_of_.end() && it->second == node) a.names.push_back(l.name());
    }
    if (a.names.empty()) continue;
    int aged = 0;
    a.value = torchstore::with_heartbeats_expired(*st, a.names, aged);
    if (aged > 0) out.push_back(std::move(a));
  }
  return out;
}

}  // namespace dp::daemon
