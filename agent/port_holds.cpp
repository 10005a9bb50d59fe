#include "port_holds.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <set>

#include "dp/tcp_sockets.hpp"

namespace dp::agent {
namespace {

// The port a TCP socket is bound to; 0 when `fd` is none.
int bound_port(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return 0;
  sockaddr_storage sa{};
  len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return 0;
  if (sa.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(sa).sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(sa).sin6_port);
  return 0;
}

}  // namespace

PortHolds PortHolds::adopt(const std::vector<int>& ports, int first_fd,
                           std::vector<std::string>& notes) {
  PortHolds h;
  for (size_t i = 0; i < ports.size(); ++i) {
    const int fd = first_fd + static_cast<int>(i);
    if (bound_port(fd) != ports[i]) {
      notes.push_back("descriptor " + std::to_string(fd) + " is not the hold of port " +
                      std::to_string(ports[i]) + ": not held past rank 0's start");
      continue;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    h.held_.emplace_back(ports[i], UniqueFd(fd));
  }
  return h;
}

std::vector<int> PortHolds::release_listened(Clock::time_point now, uid_t uid) {
  std::vector<int> released;
  if (held_.empty() || now < next_check_) return released;
  next_check_ = now + kCheckEvery;
  std::set<int> wanted;
  for (const auto& [port, fd] : held_) wanted.insert(port);
  auto listened = tcp_ports_listened_by(uid, wanted);
  if (!listened) return released;  // asked again at the next check; held meanwhile
  for (auto it = held_.begin(); it != held_.end();) {
    if (listened->count(it->first) == 0) {
      ++it;
      continue;
    }
    released.push_back(it->first);
    it = held_.erase(it);  // closes it: the program's listener holds the port now
  }
  return released;
}

std::vector<int> PortHolds::ports() const {
  std::vector<int> out;
  for (const auto& [port, fd] : held_) out.push_back(port);
  return out;
}

}  // namespace dp::agent
