#include "dp/port_holders.hpp"

#include <netinet/tcp.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace dp {

uint32_t holder_states() { return (1u << TCP_LISTEN) | (1u << TCP_CLOSE) | (1u << TCP_TIME_WAIT); }

PortHolders port_holders(const TcpSockets& table, int lo, int hi) {
  // A port counts once per uid, whatever sockets (v4, v6, several addresses).
  std::set<std::pair<unsigned, int>> seen;
  PortHolders out;
  out.partial = table.partial;
  for (const TcpSocket& s : table.sockets) {
    if (s.port < lo || s.port > hi) continue;
    out.time_wait |= s.state == TCP_TIME_WAIT;
    // A connection's local port is not a hold.
    if (s.state != TCP_LISTEN && s.state != TCP_CLOSE) continue;
    seen.emplace(s.uid, s.port);
  }
  for (const auto& [uid, port] : seen) ++out.by_uid[uid];
  return out;
}

std::string holders_text(const PortHolders& holders) {
  std::vector<std::pair<int, unsigned>> by_count;
  for (const auto& [uid, n] : holders.by_uid) by_count.emplace_back(n, uid);
  std::sort(by_count.begin(), by_count.end(),
            [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string out;
  for (const auto& [n, uid] : by_count) {
    if (!out.empty()) out += ", ";
    out +=
        "uid " + std::to_string(uid) + " (" + std::to_string(n) + (n == 1 ? " port)" : " ports)");
  }
  if (holders.partial && !out.empty())
    out += " (the node's socket tables were too long to read whole: there may be others)";
  return out;
}

}  // namespace dp
