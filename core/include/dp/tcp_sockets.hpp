// Who owns a TCP socket of this network namespace, asked of the kernel's
// socket table (NETLINK_SOCK_DIAG, what ss reads): the one way slurm-dp asks
// it. The node agent asks it of an accepted local connection before a byte
// is read (TCP has no SO_PEERCRED, and a listener on a node is reachable by
// every user there), and of its PyTorch store's refused client; it asks which
// of a step's held ports the program listens on; root asks who holds a port
// it could not take.
//
// A peer is looked up by its exact address pair. Only the peer's own
// connection counts: an ESTABLISHED socket whose pair mirrors the accepted
// one. The kernel's exact lookup also answers with a listener on the peer's
// address and port when no connection matches (a remote peer that connected
// from a port some local user listens on), and with a TIME_WAIT socket (owned
// by nobody: the uid it reports is 0); both are refused, never taken as the
// peer's owner. A peer whose socket lives elsewhere (another host, another
// namespace) has no owner here and is refused as such.
#pragma once

#include <linux/inet_diag.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "dp/result.hpp"

namespace dp {

// One socket as the kernel's table tells it.
struct TcpSocket {
  uint8_t state = 0;   // TCP_LISTEN, TCP_ESTABLISHED, ... (netinet/tcp.h)
  int port = 0;        // its local port
  uid_t uid = 0;       // its owner (0 for a TIME_WAIT socket: nobody's)
  uint64_t inode = 0;  // its inode, as /proc/PID/fd names it ("socket:[inode]")
};

struct TcpSockets {
  std::vector<TcpSocket> sockets;
  bool partial = false;  // more sockets than the caller's bound: some are missing
};

// Local ports lo..hi, both included.
struct PortSpan {
  int lo = 0, hi = 65535;
};

// Every socket of this namespace in `states` (a bit per TCP state: 1u <<
// TCP_LISTEN, ...) whose local port lies in `ports`, IPv4 then IPv6, at most
// `max` of them. Any user can make the table long; the kernel leaves out
// the sockets outside `ports` (a filter in the request), so only the span's
// own count against `max`. Errc::unavailable when the kernel cannot answer.
Result<TcpSockets> tcp_sockets(uint32_t states, size_t max, PortSpan ports = {});

// The ports of `ports` on which a socket owned by `uid` listens (IPv4 or
// IPv6), from at most kMaxListenersRead listeners: a port past the bound is
// not reported, which callers read as "not yet".
inline constexpr size_t kMaxListenersRead = 1 << 16;
Result<std::set<int>> tcp_ports_listened_by(uid_t uid, const std::set<int>& ports);

// The socket at the other end of `fd`, a connected TCP socket: Errc::not_found
// when the peer is no socket of this namespace, Errc::unavailable when the
// kernel cannot answer (no sock_diag).
Result<TcpSocket> local_tcp_peer(int fd);

// The same for the connection whose local end is `here` and remote end
// `there` (both AF_INET or both AF_INET6).
Result<TcpSocket> tcp_peer(const sockaddr_storage& here, const sockaddr_storage& there);

// The decision on the kernel's answer, pure: `answer` is the peer's socket
// only when it is an ESTABLISHED socket whose own pair is exactly `query`'s
// (its source our peer, its destination us); otherwise Errc::not_found,
// naming what answered (a listener, a TIME_WAIT socket, another connection).
Result<TcpSocket> peer_from_answer(const inet_diag_req_v2& query, const inet_diag_msg& answer);

}  // namespace dp
