#include "unix_listeners.hpp"

#include <linux/rtnetlink.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>

#include <cstring>

#include "dp/sock_diag.hpp"

namespace dp::obs {
namespace {

// One unix_diag answer: the listener it names, if abstract and prefixed.
std::optional<UnixListener> listener_of(const nlmsghdr* h, const std::string& prefix) {
  if (h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) return std::nullopt;
  const auto* m = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
  UnixListener l;
  auto len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
  for (auto* a = reinterpret_cast<const rtattr*>(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    const char* data = static_cast<const char*>(RTA_DATA(a));
    const size_t size = RTA_PAYLOAD(a);
    if (a->rta_type == UNIX_DIAG_NAME && size > 0 && data[0] == '\0')
      l.name = "@" + std::string(data + 1, size - 1);
    else if (a->rta_type == UNIX_DIAG_UID && size >= sizeof(uint32_t)) {
      uint32_t uid = 0;
      std::memcpy(&uid, data, sizeof uid);
      l.uid = static_cast<uid_t>(uid);
    }
  }
  if (l.name.rfind(prefix, 0) != 0) return std::nullopt;
  return l;
}

}  // namespace

Result<std::vector<UnixListener>> abstract_listeners(const std::string& prefix, uid_t owner,
                                                     size_t limit) {
  unix_diag_req req{};
  req.sdiag_family = AF_UNIX;
  req.udiag_states = 1u << TCP_LISTEN;
  req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_UID;
  auto nl = sock_diag_request(req, NLM_F_DUMP);
  DP_TRY(nl);
  std::vector<UnixListener> out;
  DP_TRY(sock_diag_dump(*nl, [&](const nlmsghdr& h) {
    // The owner's first: another user's names never count towards the limit.
    if (auto l = listener_of(&h, prefix); l && (!l->uid || *l->uid == owner) && out.size() < limit)
      out.push_back(std::move(*l));
    return true;
  }));
  return out;
}

}  // namespace dp::obs
