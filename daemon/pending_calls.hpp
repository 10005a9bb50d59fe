// The step's blocking calls: gets and waits on keys, barriers by name, and
// their deadlines. Pure bookkeeping, no replies: the broker asks what a set
// key, an arrival or the clock completed and answers those calls itself
// (blocking_calls.cpp). Every call is indexed by id, by key (gets and
// waits), by connection, by deadline and by barrier; take() removes it from
// all of them at once, so no index keeps a call another has forgotten.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "liveness.hpp"

namespace dp::daemon {

enum class WaitKind : uint8_t { get, wait, barrier };

struct Waiter {
  ConnId conn = 0;
  uint64_t request_id = 0;
  WaitKind kind = WaitKind::get;
  // wait of one key (Wait.value): the answer brings its value; the key stays in `keys`
  bool value = false;
  proto::Space space = proto::SPACE_STEP;  // get, wait: the keys' space
  std::vector<std::string> keys;  // get: one key; wait: those still missing; barrier: the name
  std::vector<int> ranks;         // barrier: the ranks that arrived with this call
  Clock::time_point since;        // when it was asked
  std::chrono::milliseconds timeout{0};  // 0: no deadline
  Clock::time_point deadline() const { return since + timeout; }
};

class PendingCalls {
 public:
  // max_calls: the calls pending at once (0: four per rank and 4 096 more);
  // max_barriers: the barriers open at once (the step's limits).
  explicit PendingCalls(int world_size, int max_calls = 0, int max_barriers = 1024)
      : world_(world_size),
        max_calls_(max_calls > 0 ? max_calls : 4ll * std::max(world_size, 1) + 4096),
        max_barriers_(max_barriers) {}

  size_t size() const { return calls_.size(); }
  size_t open_barriers() const { return barriers_.size(); }
  bool has_barrier(const std::string& name) const { return barriers_.count(name) != 0; }
  const Waiter* find(uint64_t id) const;
  std::vector<uint64_t> ids() const;
  std::vector<uint64_t> of_conn(ConnId conn) const;

  // A get (one key) or a wait (the keys still missing).
  uint64_t add(Waiter w);
  // `ranks` arrive at barrier `name` with one call. nullopt: that rank is
  // already in (nothing changes; `twice` says which). Otherwise the call's
  // id, and every call of the barrier once the whole world is in (the
  // barrier closes).
  struct Arrival {
    uint64_t id = 0;
    std::vector<uint64_t> complete;
  };
  std::optional<Arrival> arrive(Waiter w, int* twice);
  // Why one more call (opening barrier `new_barrier`, when given and not
  // open yet) would pass the step's limits; none: there is room.
  std::optional<std::string> refusal(const std::string* new_barrier) const;
  // The TIMEOUT message of a call whose deadline passed.
  std::string timeout_message(const Waiter& w) const;
  // "3 of 8 ranks arrived; missing ranks 1,2,..." while barrier `name` is open.
  std::optional<std::string> barrier_progress(const std::string& name) const;

  // Removes the call everywhere (a barrier's arrivals taken back while it is
  // open) and returns it; nullopt when it is gone already.
  std::optional<Waiter> take(uint64_t id);
  // Key `key` of `space` was set: the calls it completes (gets on it, waits
  // whose every key `is_set` now says is), each still pending.
  std::vector<uint64_t> key_set(proto::Space space, const std::string& key,
                                const std::function<bool(const std::string&)>& is_set);
  // The earliest call whose deadline is due at `now`.
  std::optional<uint64_t> next_due(Clock::time_point now);

 private:
  struct Barrier {
    std::vector<char> arrived;  // by rank
    int count = 0;
    std::vector<uint64_t> calls;
  };
  auto& by_key(proto::Space s) { return by_key_[s == proto::SPACE_TORCH ? 1 : 0]; }
  uint64_t index(Waiter w);

  int world_;
  long long max_calls_;
  int max_barriers_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Waiter> calls_;
  std::array<std::unordered_map<std::string, std::vector<uint64_t>>, 2> by_key_;
  std::unordered_map<ConnId, std::vector<uint64_t>> by_conn_;
  std::multimap<Clock::time_point, uint64_t> deadlines_;
  std::unordered_map<std::string, Barrier> barriers_;
};

}  // namespace dp::daemon
