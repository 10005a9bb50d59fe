// The step's connections and what each said in its hello: a rank, a node
// agent speaking for its node's ranks, or a tool. Which connection holds a
// rank now is Liveness's word (its slots); this part answers the questions
// that need both: who holds a rank, which agent serves a node, how to name
// a peer in a line, and whether a node's new hello takes over an old link.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "abort_cause.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "liveness.hpp"

namespace dp::daemon {

// "0-7" for a contiguous run, else the first few and a count.
std::string ranks_text(const std::vector<int>& ranks);
// A host as a line names it: "?" when a peer never said.
inline std::string shown_host(const std::string& host) { return host.empty() ? "?" : host; }

enum class PeerState : uint8_t { awaiting_hello, ready };

struct Peer {
  PeerState state = PeerState::awaiting_hello;
  proto::Role role = proto::ROLE_AGENT;
  int rank = -1;
  std::string host;
  std::string nonce;            // the challenge its hello must answer
  std::vector<int> node_ranks;  // ROLE_NODE: the ranks it speaks for, ascending
  int node = -1;                // ROLE_NODE: its node's index in the step (SLURM_NODEID)
  Clock::time_point connected_at;
};

class StepPeers {
 public:
  using Map = std::unordered_map<ConnId, Peer>;
  explicit StepPeers(const Liveness& live) : live_(live) {}

  // The connections, as a map.
  Map::iterator begin() { return map_.begin(); }
  Map::iterator end() { return map_.end(); }
  Map::const_iterator begin() const { return map_.begin(); }
  Map::const_iterator end() const { return map_.end(); }
  Map::iterator find(ConnId c) { return map_.find(c); }
  Map::const_iterator find(ConnId c) const { return map_.find(c); }
  const Peer& at(ConnId c) const { return map_.at(c); }
  Peer& operator[](ConnId c) { return map_[c]; }
  size_t count(ConnId c) const { return map_.count(c); }
  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  void emplace(ConnId c, Peer p) { map_.emplace(c, std::move(p)); }
  Map::iterator erase(Map::iterator it) { return map_.erase(it); }

  // conn holds rank (a rank's own connection, or its node agent's) and it has not left.
  bool holds(ConnId conn, int rank) const;
  // A ready peer that still holds a rank: a rank, or a node agent some of whose ranks
  // have neither said goodbye nor been reported lost.
  bool holds_ranks(ConnId conn, const Peer& p) const;
  // "rank 3 (host n2)", "the node agent on host n2", "an agent on host n1".
  std::string describe_peer(const Peer& p) const;
  // "rank 3 (host n2, via its node agent)".
  std::string describe_rank(int rank) const;
  // The ready node agent of node index `node` other than `except`; 0: none.
  ConnId node_conn(int node, ConnId except = 0) const;
  // Its host, or "node N" while it has no agent.
  std::string node_host(int node) const;
  // The live link a node agent's hello replaces (it reconnected): the same
  // host and ranks, or with `by_node_index` (a step that restarts, whose
  // nodes' ranks change) the same host and node index. 0: none. `self`: the
  // connection saying this hello (never its own predecessor).
  ConnId node_predecessor(const proto::Hello& h, ConnId self, bool by_node_index) const;

  // A node agent gone (`how`: lost, refused) while some of its ranks had not
  // said goodbye; `why` says how it went.
  AbortCause node_loss(ConnId conn, const Peer& p, AbortCause::How how,
                       const std::string& why) const;
  // Every rank the node agent still holds is among `silent` (sorted): the
  // node fell silent (a lone stopped libdp rank is not the node).
  bool node_fell_silent(ConnId conn, const Peer& p, const std::vector<int>& silent) const;
  // Its silence's verdict; heartbeat_timeout: the site's bound (the
  // liveness' own limit differs while a spare waits: spare_timeout).
  AbortCause node_silence(ConnId conn, const Peer& p,
                          std::chrono::milliseconds heartbeat_timeout) const;
  // The ranks a barrier call on conn brings: the rank itself, or the live
  // ranks its node agent names (each once); else why not.
  Result<std::vector<int>> arriving_ranks(ConnId conn, const Peer& p,
                                          const proto::Barrier& m) const;

 private:
  const Liveness& live_;
  Map map_;
};

}  // namespace dp::daemon
