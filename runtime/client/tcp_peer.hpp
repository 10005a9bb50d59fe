// Who is at the other end of an accepted local TCP connection, asked of the
// kernel's socket table (NETLINK_SOCK_DIAG) before a byte is read: TCP has
// no SO_PEERCRED, and a listener on a node is reachable by every user there.
// The peer's socket is looked up by its exact address pair in this process's
// network namespace, so a connection whose other end lives elsewhere (another
// host, another namespace) has no owner here and is refused as such.
#pragma once

#include <sys/types.h>

#include "dp/result.hpp"

namespace dp::rdv {

// The uid owning the peer socket of `fd` (a connected TCP socket); Errc::not_found
// when the peer is not a socket of this namespace, Errc::unavailable when the
// kernel cannot answer (no sock_diag).
Result<uid_t> local_tcp_peer_uid(int fd);

}  // namespace dp::rdv
