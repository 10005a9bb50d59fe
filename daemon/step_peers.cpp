#include "step_peers.hpp"

#include <algorithm>

#include "dp/shown_value.hpp"

namespace dp::daemon {
namespace {

std::string shown_host(const std::string& host) { return host.empty() ? "?" : host; }

}  // namespace

bool StepPeers::holds(ConnId conn, int rank) const {
  return rank >= 0 && rank < live_.world_size() && live_.slot(rank).conn == conn;
}

bool StepPeers::holds_ranks(ConnId conn, const Peer& p) const {
  if (p.state != PeerState::ready) return false;
  if (p.role == proto::ROLE_RANK) return true;
  return p.role == proto::ROLE_NODE && std::any_of(p.node_ranks.begin(), p.node_ranks.end(),
                                                   [&](int r) { return holds(conn, r); });
}

std::string StepPeers::describe_peer(const Peer& p) const {
  if (p.role == proto::ROLE_NODE) return "the node agent on host " + shown_host(p.host);
  if (p.rank >= 0) return "rank " + std::to_string(p.rank) + " (host " + shown_host(p.host) + ")";
  return "an agent on host " + shown_host(p.host);
}

std::string StepPeers::describe_rank(int rank) const {
  const RankSlot& s = live_.slot(rank);
  std::string d = "rank " + std::to_string(rank) + " (host " + shown_host(s.host);
  if (auto it = map_.find(s.conn); it != map_.end() && it->second.role == proto::ROLE_NODE)
    d += ", via its node agent";
  return d + ")";
}

ConnId StepPeers::node_conn(int node, ConnId except) const {
  for (const auto& [conn, p] : map_)
    if (conn != except && p.state == PeerState::ready && p.role == proto::ROLE_NODE &&
        p.node == node)
      return conn;
  return 0;
}

std::string StepPeers::node_host(int node) const {
  const ConnId c = node_conn(node);
  return c == 0 ? "node " + std::to_string(node) : map_.at(c).host;
}

// A hello naming exactly the ranks and host of a live node agent is that
// agent again on a new connection (it doubted its link after an outage).
ConnId StepPeers::node_predecessor(const proto::Hello& h, ConnId self, bool by_node_index) const {
  const std::string host = shown_value(h.host(), 255);
  if (by_node_index && h.rank() >= 0) {
    const ConnId held = node_conn(h.rank(), self);
    auto it = map_.find(held);
    return it != map_.end() && it->second.host == host ? held : 0;
  }
  for (int r : h.node_ranks()) {
    if (r < 0 || r >= live_.world_size()) return 0;
    const ConnId held = live_.slot(r).conn;
    if (held == 0) continue;
    auto it = map_.find(held);
    if (it == map_.end()) return 0;
    const Peer& p = it->second;
    const bool same = p.role == proto::ROLE_NODE && p.host == host &&
                      std::equal(p.node_ranks.begin(), p.node_ranks.end(), h.node_ranks().begin(),
                                 h.node_ranks().end());
    return same ? held : 0;
  }
  return 0;
}

}  // namespace dp::daemon
