#include "tcp_listeners.hpp"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dp/sock_diag.hpp"

namespace dp::rdv {
namespace {

// One family's listeners of `uid` on `ports`, added to `found`; `budget`
// counts the sockets read in all.
Result<void> dump_family(uint8_t family, uid_t uid, const std::set<int>& ports,
                         std::set<int>& found, int& budget) {
  inet_diag_req_v2 r{};
  r.sdiag_family = family;
  r.sdiag_protocol = IPPROTO_TCP;
  r.idiag_states = 1u << TCP_LISTEN;
  auto nl = sock_diag_request(r, NLM_F_DUMP);
  DP_TRY(nl);
  alignas(nlmsghdr) char buf[32 * 1024];
  while (budget > 0) {
    if (!sock_diag_answered(*nl)) return make_error(Errc::unavailable, "sock_diag: no answer");
    const ssize_t n = recv(nl->get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error(Errc::unavailable, std::string("sock_diag: ") + std::strerror(errno));
    auto left = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return {};
      if (h->nlmsg_type == NLMSG_ERROR)
        return make_error(Errc::unavailable, "sock_diag: the kernel refused the dump");
      if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
          h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
        continue;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      const int port = ntohs(m->id.idiag_sport);
      if (m->idiag_state == TCP_LISTEN && m->idiag_uid == uid && ports.count(port) != 0)
        found.insert(port);
      if (--budget <= 0) return {};
    }
  }
  return {};
}

}  // namespace

Result<std::set<int>> tcp_ports_listened_by(uid_t uid, const std::set<int>& ports) {
  std::set<int> found;
  int budget = kMaxListenersRead;
  if (ports.empty()) return found;
  DP_TRY(dump_family(AF_INET, uid, ports, found, budget));
  if (found.size() < ports.size()) DP_TRY(dump_family(AF_INET6, uid, ports, found, budget));
  return found;
}

}  // namespace dp::rdv
