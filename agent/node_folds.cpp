#include "node_folds.hpp"

#include <algorithm>

#include "dp/shown_value.hpp"

namespace dp::agent {
namespace {

NodeFolds::Clock::time_point deadline_of(uint32_t timeout_ms, NodeFolds::Clock::time_point now) {
  // 0 on the wire: no deadline.
  return timeout_ms == 0 ? NodeFolds::Clock::time_point::max()
                         : now + std::chrono::milliseconds(timeout_ms);
}

std::string missing_local(const std::set<int32_t>& arrived, const std::vector<int32_t>& ranks) {
  std::string out;
  for (int32_t r : ranks) {
    if (arrived.count(r)) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(r);
  }
  return out;
}

// A fold answered: its waiters leave with it.
template <class Table>
std::vector<NodeFolds::Waiter> take_waiters(Table& table, const std::string& key) {
  auto it = table.find(key);
  if (it == table.end()) return {};
  std::vector<NodeFolds::Waiter> w = std::move(it->second.waiters);
  table.erase(it);
  return w;
}

}  // namespace

const std::string* NodeFolds::cached(const std::string& key) const {
  auto hit = cache_.find(key);
  return hit == cache_.end() ? nullptr : &hit->second;
}

void NodeFolds::remember(const std::string& key, const std::string& value) {
  if (cache_.count(key) || cache_bytes_ + key.size() + value.size() > max_cache_bytes_) return;
  cache_bytes_ += key.size() + value.size();
  cache_.emplace(key, value);
}

bool NodeFolds::wait_get(const std::string& key, ConnId conn, uint64_t id, uint32_t timeout_ms,
                         Clock::time_point now) {
  GetState& s = gets_[key];
  s.waiters.push_back(Waiter{conn, id, deadline_of(timeout_ms, now)});
  // Each local waiter keeps its own deadline here; upstream the get waits
  // until the key exists, so a later waiter never needs a second request.
  if (s.in_flight) return false;
  s.in_flight = true;
  return true;
}

std::optional<proto::Request> NodeFolds::arrive(const std::string& name, int rank, ConnId conn,
                                                uint64_t id, uint32_t timeout_ms,
                                                const std::vector<int32_t>& node_ranks,
                                                Clock::time_point now) {
  BarrierState& s = barriers_[name];
  s.arrived.insert(rank);
  s.waiters.push_back(Waiter{conn, id, deadline_of(timeout_ms, now)});
  if (s.sent || s.arrived.size() < node_ranks.size()) return std::nullopt;
  Clock::time_point last = now;
  for (const Waiter& w : s.waiters) last = std::max(last, w.deadline);
  proto::Request up;
  auto* ub = up.mutable_barrier();
  ub->set_name(name);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last - now).count();
  ub->set_timeout_ms(last == Clock::time_point::max()
                         ? 0
                         : static_cast<uint32_t>(std::clamp<long long>(left, 1, UINT32_MAX)));
  for (int32_t r : node_ranks) ub->add_ranks(r);
  s.sent = true;
  return up;
}

std::vector<NodeFolds::Waiter> NodeFolds::take_get(const std::string& key) {
  return take_waiters(gets_, key);
}

std::vector<NodeFolds::Waiter> NodeFolds::take_barrier(const std::string& name) {
  return take_waiters(barriers_, name);
}

std::vector<NodeFolds::Late> NodeFolds::expire(Clock::time_point now, const std::string& host,
                                               const std::vector<int32_t>& node_ranks,
                                               const std::function<int(ConnId)>& rank_of) {
  std::vector<Late> late;
  for (auto& [key, s] : gets_) {
    auto due = std::stable_partition(s.waiters.begin(), s.waiters.end(),
                                     [&](const Waiter& w) { return w.deadline > now; });
    for (auto w = due; w != s.waiters.end(); ++w)
      late.push_back({w->conn, w->id,
                      "get " + shown_key(key) + ": no rank set the key before the deadline (node " +
                          host + ")"});
    s.waiters.erase(due, s.waiters.end());
  }
  for (auto it = barriers_.begin(); it != barriers_.end();) {
    BarrierState& b = it->second;
    if (!b.sent) {
      std::optional<std::string> missing;  // as the first late waiter found it; ticks stay cheap
      for (const Waiter& w : b.waiters) {
        if (w.deadline > now) continue;
        if (!missing) missing = missing_local(b.arrived, node_ranks);
        if (const int r = rank_of(w.conn); r >= 0) b.arrived.erase(r);
        late.push_back({w.conn, w.id,
                        "barrier " + shown_key(it->first) + " timed out on node " + host +
                            ": local ranks not arrived: " + *missing});
      }
      b.waiters.erase(std::remove_if(b.waiters.begin(), b.waiters.end(),
                                     [&](const Waiter& w) { return w.deadline <= now; }),
                      b.waiters.end());
    }
    it = b.waiters.empty() && !b.sent ? barriers_.erase(it) : std::next(it);
  }
  return late;
}

void NodeFolds::drop_calls() {
  gets_.clear();
  barriers_.clear();
}

void NodeFolds::drop_cache() {
  cache_.clear();
  cache_bytes_ = 0;
}

}  // namespace dp::agent
