// One request to the kernel's socket table (NETLINK_SOCK_DIAG, what ss
// reads), for whoever asks who owns a socket: TCP sockets (tcp_sockets.hpp)
// and abstract unix listeners (proto/unix_listeners.cpp). The kernel answers
// at once; each read is bounded by a second all the same, so a kernel that
// does not cannot hang the caller.
#pragma once

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "dp/result.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dp {

// A netlink socket with `body` (an inet_diag_req_v2 or unix_diag_req) sent
// under a SOCK_DIAG_BY_FAMILY header with `flags` (NLM_F_DUMP for a dump).
template <class Body>
Result<UniqueFd> sock_diag_request(const Body& body, uint16_t flags) {
  UniqueFd nl(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!nl) return sys_error(Errc::unavailable, "sock_diag socket");
  struct {
    nlmsghdr h;
    Body r;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  req.r = body;
  if (send(nl.get(), &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req))
    return sys_error(Errc::unavailable, "sock_diag request");
  return nl;
}

// Waits at most a second for the next answer datagram.
inline bool sock_diag_answered(const UniqueFd& nl) {
  pollfd p{nl.get(), POLLIN, 0};
  return poll(&p, 1, 1'000) > 0;
}

// A dump's answers, each message of SOCK_DIAG_BY_FAMILY handed to `each`
// (which returns false to read no more), until the kernel's NLMSG_DONE.
// Errc::unavailable when the kernel refuses or stops answering.
template <class Each>
Result<void> sock_diag_dump(const UniqueFd& nl, Each&& each) {
  alignas(nlmsghdr) char buf[32 * 1024];
  for (;;) {
    if (!sock_diag_answered(nl))
      return make_error(Errc::unavailable, "sock_diag: the dump did not end within 1 s");
    const ssize_t n = recv(nl.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error(Errc::unavailable, "sock_diag answer");
    auto left = static_cast<unsigned>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return {};
      if (h->nlmsg_type == NLMSG_ERROR)
        return sys_error(Errc::unavailable, "sock_diag: the kernel refused the dump",
                         -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error);
      if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && !each(*h)) return {};
    }
  }
}

}  // namespace dp
