// Who is at the other end of an accepted local TCP connection, asked of the
// kernel's socket table (NETLINK_SOCK_DIAG) before a byte is read: TCP has
// no SO_PEERCRED, and a listener on a node is reachable by every user there.
// The peer's socket is looked up by its exact address pair in this process's
// network namespace, so a connection whose other end lives elsewhere (another
// host, another namespace) has no owner here and is refused as such.
//
// Only the peer's own connection counts: an ESTABLISHED socket whose address
// pair mirrors the accepted one. The kernel's exact lookup also answers with
// a listener on the peer's address and port when no connection matches (a
// remote peer that connected from a port some local user listens on), and
// with a TIME_WAIT socket (owned by nobody: the uid it reports is 0); both
// are refused, never taken as the peer's owner.
#pragma once

#include <linux/inet_diag.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "dp/result.hpp"

namespace dp::rdv {

// The uid owning the peer socket of `fd` (a connected TCP socket); Errc::not_found
// when the peer is not a socket of this namespace, Errc::unavailable when the
// kernel cannot answer (no sock_diag).
Result<uid_t> local_tcp_peer_uid(int fd);

// The same for the connection whose local end is `here` and remote end
// `there` (both AF_INET or both AF_INET6).
Result<uid_t> tcp_peer_uid(const sockaddr_storage& here, const sockaddr_storage& there);

// The decision on the kernel's answer, pure: `answer` is the peer's owner
// only when it is an ESTABLISHED socket whose own pair is exactly `query`'s
// (its source our peer, its destination us); otherwise Errc::not_found,
// naming what answered (a listener, a TIME_WAIT socket, another connection).
Result<uid_t> peer_uid_from_answer(const inet_diag_req_v2& query, const inet_diag_msg& answer);

}  // namespace dp::rdv
