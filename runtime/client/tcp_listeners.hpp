// Which ports a user's TCP sockets listen on in this network namespace, from
// the kernel's socket table (NETLINK_SOCK_DIAG, a dump of listeners only, as
// `ss -tl` reads it): the node agent lets go of a step port it holds as soon
// as the step's program listens there (agent/port_holds.hpp).
#pragma once

#include <sys/types.h>

#include <set>

#include "dp/result.hpp"

namespace dp::rdv {

// The ports of `ports` on which a socket owned by `uid` listens (IPv4 or
// IPv6). The dump is bounded (kMaxListenersRead sockets, a second per
// answer): a port past the bound is not reported, which callers read as "not
// yet". Errc::unavailable when the kernel cannot answer.
inline constexpr int kMaxListenersRead = 1 << 16;
Result<std::set<int>> tcp_ports_listened_by(uid_t uid, const std::set<int>& ports);

}  // namespace dp::rdv
