#include "tcp_connect.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"

namespace dp::rdv {

int ms_until(Deadline d) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now())
          .count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1'000'000'000));
}

Result<int> tcp_connect_once(const std::string& host, uint16_t port, Deadline deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  const int gai = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
  if (gai != 0) {
    return make_error(Errc::connection,
                      "cannot resolve rendezvous host '" + host + "': " + gai_strerror(gai));
  }
  std::string last = "no address";
  Errc code = Errc::connection;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    UniqueFd sock(socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int fd = sock.get();
    if (!sock) {
      last = dp::errno_text();
      continue;
    }
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int pr = 0;
      do {
        pr = poll(&p, 1, ms_until(deadline));
      } while (pr < 0 && errno == EINTR);
      if (pr == 0) {
        last = "connect timed out";
        code = Errc::timeout;
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last = dp::errno_text();
      continue;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    freeaddrinfo(res);
    return sock.release();
  }
  freeaddrinfo(res);
  return make_error(code,
                    "cannot connect to dp-rendezvousd at " + host + ":" + port_text + ": " + last);
}

Result<void> write_all(int fd, const char* data, size_t n, Deadline deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::send(fd, data + done, n - done, MSG_NOSIGNAL);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int pr = poll(&p, 1, ms_until(deadline));
      if (pr == 0) return make_error(Errc::timeout, "sending to dp-rendezvousd timed out");
      continue;
    }
    return make_error(Errc::connection,
                      std::string("sending to dp-rendezvousd failed: ") + dp::errno_text());
  }
  return {};
}

}  // namespace dp::rdv
