#include "unix_connect.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include "dp/unique_fd.hpp"

namespace dp::rdv {

Result<socklen_t> abstract_address(const std::string& at_name, sockaddr_un& out) {
  out = sockaddr_un{};
  out.sun_family = AF_UNIX;
  if (at_name.size() < 2 || at_name[0] != '@' || at_name.size() > sizeof out.sun_path)
    return make_error(Errc::invalid_argument,
                      "DP_AGENT_SOCKET '" + at_name.substr(0, 120) +
                          "': expected '@' and an abstract socket name of at most " +
                          std::to_string(sizeof out.sun_path - 1) + " characters");
  // Abstract: a leading NUL, and the length says where the name ends.
  std::memcpy(out.sun_path + 1, at_name.data() + 1, at_name.size() - 1);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + at_name.size());
}

Result<uid_t> peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return make_error(Errc::connection, std::string("SO_PEERCRED: ") + std::strerror(errno));
  return cred.uid;
}

std::string network_namespace() {
  char link[128] = {};
  const ssize_t n = readlink("/proc/self/ns/net", link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string();
}

namespace {

Error other_namespace(const std::string& at_name, const std::string& agent_netns,
                      const std::string& mine) {
  return make_error(
      Errc::unavailable,
      "cannot connect to the node agent at " + at_name + ": this task runs in network namespace " +
          mine + ", the agent in the node's (" + agent_netns +
          "), and its abstract socket exists only there. The task's container has a network "
          "namespace of its own: drop the option that gives it one (pyxis "
          "--container-unshare=net, enroot start --net, apptainer --net) and run it in the "
          "node's network");
}

}  // namespace

Result<int> unix_connect_once(const std::string& at_name, const std::string& agent_netns) {
  sockaddr_un sa;
  auto len = abstract_address(at_name, sa);
  DP_TRY(len);
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int fd = sock.get();
  if (!sock) return make_error(Errc::connection, std::string("socket: ") + std::strerror(errno));
  // A unix stream connect completes at once or fails; EAGAIN (the agent's
  // listen queue is full) leaves the socket unconnected: a retryable error,
  // never a socket whose peer credentials are then unknown.
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), *len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int e = errno;
    const std::string mine = agent_netns.empty() ? std::string() : network_namespace();
    if (!mine.empty() && mine != agent_netns) return other_namespace(at_name, agent_netns, mine);
    return make_error(Errc::connection,
                      "cannot connect to the node agent at " + at_name + ": " + std::strerror(e));
  }
  auto uid = peer_uid(fd);
  if (!uid || *uid != getuid()) {
    return make_error(Errc::unauthorized,
                      "the node agent socket " + at_name + " belongs to " +
                          (uid ? "uid " + std::to_string(*uid) : std::string("an unknown user")) +
                          ", not to this user; refusing to talk to it");
  }
  return sock.release();
}

}  // namespace dp::rdv
