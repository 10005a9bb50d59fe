// One request to the kernel's socket table (NETLINK_SOCK_DIAG, what ss
// reads), for whoever asks who owns a socket: the node agent of a TCP peer
// (runtime/client/tcp_peer.cpp), dp-top of an abstract listener
// (unix_listeners.cpp). The kernel answers at once; each read is bounded by
// a second all the same, so a kernel that does not cannot hang the caller.
#pragma once

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dp/result.hpp"
#include "dp/unique_fd.hpp"

namespace dp {

// A netlink socket with `body` (an inet_diag_req_v2 or unix_diag_req) sent
// under a SOCK_DIAG_BY_FAMILY header with `flags` (NLM_F_DUMP for a dump).
template <class Body>
Result<UniqueFd> sock_diag_request(const Body& body, uint16_t flags) {
  UniqueFd nl(socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  auto failed = [](const char* what) {
    return make_error(Errc::unavailable,
                      std::string("sock_diag ") + what + ": " + std::strerror(errno));
  };
  if (!nl) return failed("socket");
  struct {
    nlmsghdr h;
    Body r;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
  req.r = body;
  if (send(nl.get(), &req, sizeof req, 0) != static_cast<ssize_t>(sizeof req))
    return failed("request");
  return nl;
}

// Waits at most a second for the next answer datagram.
inline bool sock_diag_answered(const UniqueFd& nl) {
  pollfd p{nl.get(), POLLIN, 0};
  return poll(&p, 1, 1'000) > 0;
}

}  // namespace dp
