#include "step_peers.hpp"

#include <algorithm>

#include "dp/shown_value.hpp"
#include "step_report.hpp"

namespace dp::daemon {
std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  if (ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size())) {
    return ranks.size() == 1 ? std::to_string(ranks.front())
                             : std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  }
  return rank_list(ranks);
}

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

AbortCause StepPeers::node_loss(ConnId conn, const Peer& p, AbortCause::How how,
                                const std::string& why) const {
  std::vector<int> live;
  for (int r : p.node_ranks)
    if (holds(conn, r)) live.push_back(r);
  AbortCause c;
  c.how = how;
  c.rank = live.empty() ? -1 : live.front();
  c.host = p.host;
  c.node = p.node;
  c.message = "the node agent on host " + shown_host(p.host) + " (ranks " +
              ranks_text(p.node_ranks) + ") " + why + " while rank(s) " + ranks_text(live) +
              " had not said goodbye: the node, its agent or its network failed";
  return c;
}

bool StepPeers::node_fell_silent(ConnId conn, const Peer& p, const std::vector<int>& silent) const {
  return std::all_of(p.node_ranks.begin(), p.node_ranks.end(), [&](int r) {
    return !holds(conn, r) || std::binary_search(silent.begin(), silent.end(), r);
  });
}

AbortCause StepPeers::node_silence(ConnId conn, const Peer& p,
                                   std::chrono::milliseconds heartbeat_timeout) const {
  const auto limit = std::chrono::duration_cast<std::chrono::milliseconds>(live_.silence_limit());
  AbortCause c = node_loss(conn, p, AbortCause::How::node_silent, "");
  c.message =
      "the node agent on host " + shown_host(p.host) + " (ranks " + ranks_text(p.node_ranks) +
      ") sent no heartbeat for " + std::to_string(limit.count()) +
      " ms while other nodes were heard: the node is frozen, stopped alone or cut off "
      "(the bound is the site's " +
      (limit != heartbeat_timeout ? "spare_timeout, a spare waiting" : "heartbeat_timeout") + ")";
  return c;
}

Result<std::vector<int>> StepPeers::arriving_ranks(ConnId conn, const Peer& p,
                                                   const proto::Barrier& m) const {
  if (p.role == proto::ROLE_RANK && p.rank >= 0) return std::vector<int>{p.rank};
  const std::string barrier = "barrier " + shown_key(m.name());
  if (p.role != proto::ROLE_NODE)
    return make_error(Errc::invalid_argument,
                      barrier + ": only ranks take part in barriers; connect with role rank");
  if (m.ranks().empty())
    return make_error(Errc::invalid_argument, barrier + ": a node agent names the arriving ranks");
  std::vector<int> ranks(m.ranks().begin(), m.ranks().end());
  for (int r : ranks) {
    if (!holds(conn, r))
      return make_error(Errc::invalid_argument, barrier + ": rank " + std::to_string(r) +
                                                    " is not a live rank of this node agent");
  }
  std::sort(ranks.begin(), ranks.end());
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    return make_error(Errc::invalid_argument, barrier + ": a rank is listed twice");
  return ranks;
}

}  // namespace dp::daemon
