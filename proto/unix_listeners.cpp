#include "unix_listeners.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "dp/unique_fd.hpp"

namespace dp::obs {
namespace {

Error diag_error(const std::string& what) {
  return make_error(Errc::unavailable, "sock_diag (unix): " + what + ": " + std::strerror(errno));
}

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

Result<std::vector<UnixListener>> abstract_listeners(const std::string& prefix, size_t limit) {
  UniqueFd nl(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return diag_error("socket");
  struct {
    nlmsghdr h;
    unix_diag_req r;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.r.sdiag_family = AF_UNIX;
  req.r.udiag_states = 1u << TCP_LISTEN;
  req.r.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_UID;
  if (send(nl.get(), &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req))
    return diag_error("request");
  std::vector<UnixListener> out;
  alignas(nlmsghdr) char buf[32768];
  // The kernel answers at once; the bound only guards against one that does not.
  for (pollfd p{nl.get(), POLLIN, 0}; poll(&p, 1, 1'000) > 0;) {
    const ssize_t n = recv(nl.get(), buf, sizeof buf, 0);
    if (n < 0) return diag_error("answer");
    auto left = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf); NLMSG_OK(h, left);
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return out;
      if (h->nlmsg_type == NLMSG_ERROR) {
        errno = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
        return diag_error("answer");
      }
      if (auto l = listener_of(h, prefix); l && out.size() < limit) out.push_back(std::move(*l));
    }
  }
  return make_error(Errc::unavailable, "sock_diag (unix): the dump did not end within 1 s");
}

}  // namespace dp::obs
