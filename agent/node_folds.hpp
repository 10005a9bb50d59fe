// The node's gets and barriers folded: identical blocking gets in flight are
// one upstream get, the node's ranks arrive at a barrier upstream together
// and once, and write-once keys are answered from a bounded cache. Pure: the
// core (agent_core.hpp) sends upstream what this part says to send and
// hands back the daemon's answers; the waiters it returns are answered there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dp/proto/rendezvous.pb.h"

namespace dp::agent {

class NodeFolds {
 public:
  using Clock = std::chrono::steady_clock;
  using ConnId = uint64_t;
  struct Waiter {  // a local call answered later
    ConnId conn = 0;
    uint64_t id = 0;
    Clock::time_point deadline;
  };
  struct Late {  // a local call past its deadline, and why
    ConnId conn = 0;
    uint64_t id = 0;
    std::string message;
  };

  explicit NodeFolds(size_t max_cache_bytes) : max_cache_bytes_(max_cache_bytes) {}

  // A write-once key's value the daemon gave already; none: ask it.
  const std::string* cached(const std::string& key) const;
  // The daemon agreed to a write-once value (a set's OK, or a get's flag):
  // kept while the cache has room.
  void remember(const std::string& key, const std::string& value);
  // A blocking get waits here, timeout_ms 0: no deadline; true: the key's
  // upstream get is to be sent (none in flight for it).
  bool wait_get(const std::string& key, ConnId conn, uint64_t id, uint32_t timeout_ms,
                Clock::time_point now);
  // A local rank arrives at barrier `name`; once all of `node_ranks` did,
  // the one upstream arrival for the node, with the time the most patient
  // local rank has left (the others time out here).
  std::optional<proto::Request> arrive(const std::string& name, int rank, ConnId conn, uint64_t id,
                                       uint32_t timeout_ms, const std::vector<int32_t>& node_ranks,
                                       Clock::time_point now);
  // The daemon answered the key's get or the barrier: its waiters, to answer.
  std::vector<Waiter> take_get(const std::string& key);
  std::vector<Waiter> take_barrier(const std::string& name);
  // Local deadlines: a get still waiting upstream, a barrier not yet complete
  // on this node (one sent upstream is the daemon's to time out). rank_of:
  // a waiter's local rank (-1: gone), whose arrival is taken back.
  std::vector<Late> expire(Clock::time_point now, const std::string& host,
                           const std::vector<int32_t>& node_ranks,
                           const std::function<int(ConnId)>& rank_of);
  // The programs stop: their calls go. They start again: so do the cached keys.
  void drop_calls();
  void drop_cache();
  size_t cached_keys() const { return cache_.size(); }

 private:
  struct GetState {
    bool in_flight = false;
    std::vector<Waiter> waiters;
  };
  struct BarrierState {
    std::set<int32_t> arrived;
    std::vector<Waiter> waiters;
    bool sent = false;
  };

  std::unordered_map<std::string, GetState> gets_;
  std::unordered_map<std::string, BarrierState> barriers_;
  std::unordered_map<std::string, std::string> cache_;  // write-once keys
  size_t cache_bytes_ = 0;
  size_t max_cache_bytes_;
};

}  // namespace dp::agent
