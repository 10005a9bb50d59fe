// A TCP connection to a port of 127.0.0.1, for tests of listeners and holds.
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

}  // namespace dp::test
