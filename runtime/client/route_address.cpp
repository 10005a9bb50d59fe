#include "route_address.hpp"

#include <cerrno>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dp::net {

Result<std::string> local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* list = nullptr;
  int rc = getaddrinfo(host.c_str(), "9", &hints, &list);
  if (rc != 0) {
    return make_error(Errc::invalid_argument, "cannot resolve '" + host + "': " + gai_strerror(rc) +
                                                  "; check the name or use an IP address");
  }
  std::string failure = "no address";
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    const UniqueFd sock(::socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    const int fd = sock.get();
    if (!sock) continue;
    // connect() on a datagram socket only selects the route and source address.
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      failure = dp::errno_text();
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    const int got = ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    if (got != 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (inet_ntop(local.ss_family, raw, text, sizeof(text)) != nullptr) {
      freeaddrinfo(list);
      return std::string(text);
    }
  }
  freeaddrinfo(list);
  return make_error(Errc::connection, "no local interface routes to '" + host + "' (" + failure +
                                          "); check the network configuration of this node");
}

}  // namespace dp::net
