// Who may hold connections that have not said hello yet, per source address.
// Anyone who can reach the daemon's port can open connections; the step's own
// nodes (the addresses srun gave) must still get their hello through. Each
// source has a cap (the step's nodes a larger share of their own); past it,
// the source's own oldest goes. Past the whole budget, the oldest of the
// source holding the most goes, never a node of the step within its share.
// Pure bookkeeping: the broker decides what an eviction says.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "liveness.hpp"

namespace dp::daemon {

class HelloBudget {
 public:
  struct Caps {
    int per_stranger = 16;  // connections without hello from one address not of the step
    int per_node = 64;      // from one of the step's node addresses
  };

  // The caps of a step: `budget` connections without hello in all
  // (dp-rendezvousd --max-unauthenticated); with node agents each node
  // connects once, without them its ranks (`world` over `step_nodes`) do.
  static Caps caps_for(int budget, bool node_agents, int step_nodes, int world);
  void set_caps(Caps caps) { caps_ = caps; }
  // The step's node addresses (numeric, as the server formats peers).
  void set_step_nodes(const std::vector<std::string>& addresses);
  bool is_step_node(const std::string& source) const { return nodes_.count(source) != 0; }

  void add(ConnId conn, const std::string& source);
  // Said hello, or gone: no longer counted. Unknown ids are ignored.
  void remove(ConnId conn);

  // The next connection to evict so that every source keeps to its cap and
  // the whole stays within `total`; nothing when nobody may be evicted.
  std::optional<ConnId> next_eviction(int total) const;

  int count() const { return static_cast<int>(source_of_.size()); }
  int count(const std::string& source) const;
  const std::string& source_of(ConnId conn) const;
  // An unknown source (empty: tests, the fuzzer) is held to the whole budget only.
  int cap(const std::string& source) const {
    if (source.empty()) return 1 << 30;
    return is_step_node(source) ? caps_.per_node : caps_.per_stranger;
  }

 private:
  struct Source {
    // (admission number, id) in connect order; entries already removed are
    // skipped. A vector: a source holds at most its cap (a deque's first
    // block alone would cost 512 bytes for each of thousands of nodes).
    std::vector<std::pair<uint64_t, ConnId>> conns;
    size_t head = 0;  // conns[head..] may be live
    int live = 0;
  };
  ConnId oldest(const std::string& source) const;
  void recount(const std::string& source, Source& s, int delta);

  Caps caps_;
  std::unordered_set<std::string> nodes_;
  std::unordered_map<std::string, Source> sources_;
  struct Entry {
    std::string source;
    uint64_t seq = 0;
  };
  bool live(const std::pair<uint64_t, ConnId>& e) const;
  std::unordered_map<ConnId, Entry> source_of_;
  uint64_t next_seq_ = 1;
  // (live count, source) of the sources not of the step: the largest is
  // found in O(log n). A node never holds more than its cap, which is its
  // share, so past the whole budget only strangers are evicted.
  std::set<std::pair<int, std::string>> strangers_by_count_;
  std::string last_source_;
};

}  // namespace dp::daemon
