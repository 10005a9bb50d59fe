#include "hello_budget.hpp"

#include <algorithm>

#include <cstddef>

namespace dp::daemon {

void HelloBudget::set_step_nodes(const std::vector<std::string>& addresses) {
  nodes_.clear();
  nodes_.insert(addresses.begin(), addresses.end());
}

bool HelloBudget::live(const std::pair<uint64_t, ConnId>& e) const {
  auto it = source_of_.find(e.second);
  return it != source_of_.end() && it->second.seq == e.first;
}

void HelloBudget::recount(const std::string& source, Source& s, int delta) {
  const bool stranger = !is_step_node(source);
  if (stranger && s.live > 0) strangers_by_count_.erase({s.live, source});
  s.live += delta;
  if (stranger && s.live > 0) strangers_by_count_.emplace(s.live, source);
}

void HelloBudget::add(ConnId conn, const std::string& source) {
  remove(conn);
  const uint64_t seq = next_seq_++;
  source_of_[conn] = Entry{source, seq};
  Source& s = sources_[source];
  s.conns.emplace_back(seq, conn);
  recount(source, s, +1);
  last_source_ = source;
}

void HelloBudget::remove(ConnId conn) {
  auto it = source_of_.find(conn);
  if (it == source_of_.end()) return;
  const std::string source = std::move(it->second.source);
  source_of_.erase(it);
  auto sit = sources_.find(source);
  if (sit == sources_.end()) return;
  Source& s = sit->second;
  recount(source, s, -1);
  while (s.head < s.conns.size() && !live(s.conns[s.head])) ++s.head;
  if (s.live == 0) {
    sources_.erase(sit);
  } else if (s.head > 64 && s.head * 2 > s.conns.size()) {
    s.conns.erase(s.conns.begin(), s.conns.begin() + static_cast<std::ptrdiff_t>(s.head));
    s.head = 0;
  }
}

int HelloBudget::count(const std::string& source) const {
  auto it = sources_.find(source);
  return it == sources_.end() ? 0 : it->second.live;
}

const std::string& HelloBudget::source_of(ConnId conn) const {
  static const std::string none;
  auto it = source_of_.find(conn);
  return it == source_of_.end() ? none : it->second.source;
}

ConnId HelloBudget::oldest(const std::string& source) const {
  auto it = sources_.find(source);
  if (it == sources_.end()) return 0;
  const Source& s = it->second;
  for (size_t i = s.head; i < s.conns.size(); ++i)
    if (live(s.conns[i])) return s.conns[i].second;
  return 0;
}

std::optional<ConnId> HelloBudget::next_eviction(int total) const {
  if (count(last_source_) > cap(last_source_)) {
    if (const ConnId c = oldest(last_source_)) return c;
  }
  if (count() <= total || strangers_by_count_.empty()) return std::nullopt;
  if (const ConnId c = oldest(strangers_by_count_.rbegin()->second)) return c;
  return std::nullopt;
}

HelloBudget::Caps HelloBudget::caps_for(int budget, bool node_agents, int step_nodes, int world) {
  budget = std::max(1, budget);
  const int nodes = std::max(1, step_nodes);
  // A node's share: the general budget plus its ranks when they connect
  // directly, so a flood from the node's own address still leaves its agent
  // (or ranks) the time of `share` further connections to say hello.
  const int ranks_per_node = (std::max(world, 1) + nodes - 1) / nodes;
  Caps caps;
  caps.per_stranger = std::max(1, budget / 4);
  caps.per_node = budget + (node_agents ? 1 : ranks_per_node);
  return caps;
}

}  // namespace dp::daemon
