#include "dp/tcp_sockets.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <array>
#include <cstring>
#include <string>

#include "dp/sock_diag.hpp"
#include "dp/sys_error.hpp"

namespace dp {
namespace {

TcpSocket socket_of(const inet_diag_msg& m) {
  return TcpSocket{m.idiag_state, ntohs(m.id.idiag_sport), static_cast<uid_t>(m.idiag_uid),
                   m.idiag_inode};
}

// A dump request whose sockets the kernel keeps to local ports lo..hi: its
// filter program (INET_DIAG_REQ_BYTECODE, what `ss sport ge :LO and sport le
// :HI` sends). Each test jumps `yes` bytes on, else `no`: past the program's
// end by 4 is a rejection, its exact end an acceptance.
struct SpanRequest {
  inet_diag_req_v2 req;
  nlattr attr;
  inet_diag_bc_op ops[4];
};
static_assert(sizeof(SpanRequest) ==
              sizeof(inet_diag_req_v2) + sizeof(nlattr) + 4 * sizeof(inet_diag_bc_op));

SpanRequest span_request(const inet_diag_req_v2& r, PortSpan ports) {
  constexpr uint16_t kLen = sizeof SpanRequest::ops;  // 16: two tests of two ops each
  SpanRequest s{};
  s.req = r;
  s.attr.nla_len = static_cast<uint16_t>(NLA_HDRLEN + kLen);
  s.attr.nla_type = INET_DIAG_REQ_BYTECODE;
  s.ops[0] = {INET_DIAG_BC_S_GE, 8, kLen + 4};
  s.ops[1] = {0, 0, static_cast<uint16_t>(ports.lo)};
  s.ops[2] = {INET_DIAG_BC_S_LE, 8, kLen - 8 + 4};
  s.ops[3] = {0, 0, static_cast<uint16_t>(ports.hi)};
  return s;
}

// One family's sockets in `states` and `ports`, added to `out` up to `max`.
Result<void> dump_family(uint8_t family, uint32_t states, size_t max, PortSpan ports,
                         TcpSockets& out) {
  inet_diag_req_v2 r{};
  r.sdiag_family = family;
  r.sdiag_protocol = IPPROTO_TCP;
  r.idiag_states = states;
  auto nl = sock_diag_request(span_request(r, ports), NLM_F_DUMP);
  DP_TRY(nl);
  return sock_diag_dump(*nl, [&](const nlmsghdr& h) {
    if (h.nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) return true;
    if (out.sockets.size() >= max) {
      out.partial = true;
      return false;
    }
    out.sockets.push_back(socket_of(*static_cast<const inet_diag_msg*>(NLMSG_DATA(&h))));
    return true;
  });
}

// The peer's socket's own pair: its source is our peer, its destination us.
template <class Sa, auto Port, auto Addr>
void fill_pair(const sockaddr_storage& here, const sockaddr_storage& there, inet_diag_req_v2& r) {
  const auto& h = reinterpret_cast<const Sa&>(here);
  const auto& t = reinterpret_cast<const Sa&>(there);
  r.id.idiag_sport = t.*Port;
  r.id.idiag_dport = h.*Port;
  std::memcpy(r.id.idiag_src, &(t.*Addr), sizeof(t.*Addr));
  std::memcpy(r.id.idiag_dst, &(h.*Addr), sizeof(h.*Addr));
}

// The address pair as the peer's socket has it: its source is our peer.
Result<inet_diag_req_v2> pair_query(const sockaddr_storage& here, const sockaddr_storage& there) {
  if (here.ss_family != there.ss_family ||
      (here.ss_family != AF_INET && here.ss_family != AF_INET6))
    return make_error(Errc::invalid_argument, "not a TCP/IP connection");
  inet_diag_req_v2 r{};
  r.sdiag_family = static_cast<uint8_t>(here.ss_family);
  r.sdiag_protocol = IPPROTO_TCP;
  r.idiag_states = ~0u;
  r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (here.ss_family == AF_INET)
    fill_pair<sockaddr_in, &sockaddr_in::sin_port, &sockaddr_in::sin_addr>(here, there, r);
  else fill_pair<sockaddr_in6, &sockaddr_in6::sin6_port, &sockaddr_in6::sin6_addr>(here, there, r);
  return r;
}

// What answered instead of the peer's connection, for the refusal.
std::string answered_as(uint8_t state) {
  switch (state) {
    case TCP_LISTEN: return "a listener";
    case TCP_TIME_WAIT: return "a socket in TIME_WAIT";
    default: return "a socket in TCP state " + std::to_string(state);
  }
}

// An address of a sock_diag pair as IPv6 would write it: IPv4 addresses fill
// the first word (the kernel leaves the rest zero) and become ::ffff:a.b.c.d,
// the form a dual-stack socket (AF_INET6, PyTorch's client) reports for the
// same connection.
std::array<uint32_t, 4> as_ipv6(uint8_t family, const uint32_t (&addr)[4]) {
  if (family == AF_INET) return {0, 0, htonl(0xffff), addr[0]};
  return {addr[0], addr[1], addr[2], addr[3]};
}

}  // namespace

Result<TcpSockets> tcp_sockets(uint32_t states, size_t max, PortSpan ports) {
  TcpSockets out;
  if (ports.lo > ports.hi) return out;
  DP_TRY(dump_family(AF_INET, states, max, ports, out));
  if (!out.partial) DP_TRY(dump_family(AF_INET6, states, max, ports, out));
  return out;
}

Result<std::set<int>> tcp_ports_listened_by(uid_t uid, const std::set<int>& ports) {
  std::set<int> found;
  if (ports.empty()) return found;
  auto listeners =
      tcp_sockets(1u << TCP_LISTEN, kMaxListenersRead, PortSpan{*ports.begin(), *ports.rbegin()});
  DP_TRY(listeners);
  for (const TcpSocket& s : listeners->sockets)
    if (s.uid == uid && ports.count(s.port) != 0) found.insert(s.port);
  return found;
}

Result<TcpSocket> peer_from_answer(const inet_diag_req_v2& query, const inet_diag_msg& answer) {
  const inet_diag_sockid& q = query.id;
  const inet_diag_sockid& a = answer.id;
  const bool mirrors =
      a.idiag_sport == q.idiag_sport && a.idiag_dport == q.idiag_dport &&
      as_ipv6(answer.idiag_family, a.idiag_src) == as_ipv6(query.sdiag_family, q.idiag_src) &&
      as_ipv6(answer.idiag_family, a.idiag_dst) == as_ipv6(query.sdiag_family, q.idiag_dst);
  if (answer.idiag_state != TCP_ESTABLISHED)
    return make_error(Errc::not_found,
                      "the kernel answered with " + answered_as(answer.idiag_state) +
                          ", not the peer's connection: the peer is no socket of this network "
                          "namespace");
  if (!mirrors)
    return make_error(Errc::not_found,
                      "the kernel answered with another connection than the peer's: the peer is "
                      "no socket of this network namespace");
  return socket_of(answer);
}

Result<TcpSocket> tcp_peer(const sockaddr_storage& here, const sockaddr_storage& there) {
  auto query = pair_query(here, there);
  DP_TRY(query);
  auto nl = sock_diag_request(*query, 0);
  DP_TRY(nl);
  if (!sock_diag_answered(*nl)) return make_error(Errc::unavailable, "sock_diag: no answer");
  alignas(nlmsghdr) char buf[8192];
  const ssize_t n = recv(nl->get(), buf, sizeof buf, 0);
  if (n < static_cast<ssize_t>(sizeof(nlmsghdr))) return sys_error(Errc::unavailable, "sock_diag");
  const auto* h = reinterpret_cast<const nlmsghdr*>(buf);
  if (!NLMSG_OK(h, static_cast<unsigned>(n)))
    return make_error(Errc::unavailable, "sock_diag: bad answer");
  if (h->nlmsg_type == NLMSG_ERROR) {
    const int e = -static_cast<const nlmsgerr*>(NLMSG_DATA(h))->error;
    if (e == ENOENT)
      return make_error(Errc::not_found, "the peer is no socket of this host's network namespace");
    return sys_error(Errc::unavailable, "sock_diag", e);
  }
  if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
    return make_error(Errc::unavailable, "sock_diag: unexpected answer");
  return peer_from_answer(*query, *static_cast<const inet_diag_msg*>(NLMSG_DATA(h)));
}

Result<TcpSocket> local_tcp_peer(int fd) {
  sockaddr_storage here{}, there{};
  socklen_t a = sizeof here, b = sizeof there;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&here), &a) != 0)
    return sys_error(Errc::internal, "getsockname");
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&there), &b) != 0)
    return sys_error(Errc::connection, "getpeername");
  return tcp_peer(here, there);
}

}  // namespace dp
