#include "route_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dp::spank {

Result<std::string> local_address_towards(const std::string& peer) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(peer.c_str(), "9", &hints, &res);
  if (rc != 0)
    return make_error(Errc::connection,
                      "cannot resolve the master node '" + peer + "': " + gai_strerror(rc));
  std::string out;
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai && out.empty(); ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      if (local.ss_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof text);
        out = text;
      } else if (local.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof text);
        out = std::string("[") + text + "]";
      }
    } else {
      last_error = std::strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(res);
  if (out.empty())
    return make_error(Errc::connection, "no route from this host to the master node '" + peer +
                                            "': " + last_error);
  return out;
}

}  // namespace dp::spank
