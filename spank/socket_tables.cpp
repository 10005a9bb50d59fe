#include "socket_tables.hpp"

namespace dp::spank {

PortHolders port_holders_here(int lo, int hi) {
  auto table = tcp_sockets(holder_states(), kMaxHolderSockets, PortSpan{lo, hi});
  return table ? port_holders(*table, lo, hi) : PortHolders{};
}

std::string port_holder_text(int port) {
  const PortHolders h = port_holders_here(port, port);
  std::string uids;
  for (const auto& [uid, n] : h.by_uid)
    uids += (uids.empty() ? "uid " : ", uid ") + std::to_string(uid);
  if (!uids.empty()) return "held by " + uids;
  return std::string(
             "by a socket that does not listen: the kernel's socket tables name only "
             "listeners' owners") +
         (h.partial ? ", and were too long to read whole" : "");
}

}  // namespace dp::spank
