#include "unix_connect.hpp"

#include <unistd.h>

#include <cerrno>

#include "dp/shown_value.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "dp/unix_socket.hpp"

namespace dp::rdv {

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
  auto addr = unix_address(at_name);
  if (!addr || !addr->abstract())
    return make_error(Errc::invalid_argument,
                      "DP_AGENT_SOCKET: " +
                          (addr ? "'" + shown_value(at_name, 120) + "' is no abstract name ('@...')"
                                : addr.error().message));
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int fd = sock.get();
  if (!sock) return sys_error(Errc::connection, "socket");
  // A unix stream connect completes at once or fails; EAGAIN (the agent's
  // listen queue is full) leaves the socket unconnected: a retryable error,
  // never a socket whose peer credentials are then unknown.
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr->sa), addr->len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int e = errno;
    const std::string mine = agent_netns.empty() ? std::string() : network_namespace();
    if (!mine.empty() && mine != agent_netns) return other_namespace(at_name, agent_netns, mine);
    return sys_error(Errc::connection, "cannot connect to the node agent at " + at_name, e);
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
