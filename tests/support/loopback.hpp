// A TCP connection to a port of 127.0.0.1, and a server's socket on every
// address, for tests of listeners and holds.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include "dp/unique_fd.hpp"

namespace dp::test {

// Connected (blocking, close-on-exec), or empty when the connect failed.
inline UniqueFd connect_loopback(int port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) return UniqueFd();
  return fd;
}

// A listener (close-on-exec) on 127.0.0.1 at a port the OS chose, its
// address in `addr`; empty when the bind or the listen failed.
inline UniqueFd listen_loopback(sockaddr_in& addr) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  addr = sockaddr_in{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(fd.get(), 4) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return UniqueFd();
  return fd;
}

// How a test's server socket binds: the options servers set.
struct BindAs {
  bool reuseaddr = false;  // SO_REUSEADDR (PyTorch's TCPStore, Ray, Go's servers)
  bool reuseport = false;  // SO_REUSEPORT (gRPC's servers)
  bool listening = false;
};

// A TCP socket bound to `port` (0: the OS's choice) on every address, IPv6
// and IPv4, as servers bind; empty when the bind or the listen failed (errno
// says why).
inline UniqueFd bound_socket(int port, BindAs how) {
  UniqueFd fd(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int one = 1, zero = 0;
  if (how.reuseaddr) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (how.reuseport) setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return UniqueFd();
  if (how.listening && listen(fd.get(), 64) != 0) return UniqueFd();
  return fd;
}

}  // namespace dp::test
