#include "dp/lease_share.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace dp {

Result<void> check_lease_share(const LeaseHolders& held, const ShareAsk& ask) {
  if (ask.share_ports <= 0) return {};
  int others = 0;
  std::string steps;
  for (const auto& [tag, n] : held.owner_steps) {
    if (tag == ask.tag) continue;
    others += n;
    steps += (steps.empty() ? "" : ", ") + tag + " (" + std::to_string(n) + ")";
  }
  if (others + ask.count <= ask.share_ports) return {};
  const std::string share = "a user may hold " + std::to_string(ask.share_ports) +
                            " leased ports on a node (lease_share= in plugstack.conf; by default "
                            "a quarter of the ports= range)";
  const std::string need = "this step needs " + ask.need;
  if (others == 0)
    return make_error(Errc::unavailable, share + " and " + need +
                                             ": ask for fewer with --dp-ports, or ask the admin "
                                             "to raise lease_share=");
  return make_error(Errc::unavailable,
                    "uid " + std::to_string(ask.owner) + " already holds " +
                        std::to_string(others) + " leased ports on this node (steps " + steps +
                        "), and " + share + "; " + need +
                        ": end one of those steps first, ask for fewer with --dp-ports, or run "
                        "this one on another node");
}

std::string lease_holders_text(const LeaseHolders& held) {
  std::vector<std::pair<int, long>> order;
  for (const auto& [uid, n] : held.by_uid) order.emplace_back(-n, uid);
  std::sort(order.begin(), order.end());
  std::string out;
  for (const auto& [minus_n, uid] : order)
    out += (out.empty() ? "" : ", ") +
           (uid < 0 ? std::string("an older release") : "uid " + std::to_string(uid)) + " (" +
           std::to_string(-minus_n) + (minus_n == -1 ? " port)" : " ports)");
  return out;
}

}  // namespace dp
