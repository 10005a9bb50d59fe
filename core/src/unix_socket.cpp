#include "dp/unix_socket.hpp"

#include <cstddef>
#include <cstring>

#include "dp/shown_value.hpp"
#include "dp/sys_error.hpp"

namespace dp {

Result<UnixAddress> unix_address(const std::string& name) {
  UnixAddress a;
  a.sa.sun_family = AF_UNIX;
  const bool abstract = !name.empty() && name[0] == '@';
  // A path needs its NUL inside sun_path; an abstract name's leading NUL takes the '@''s place.
  const size_t room = sizeof a.sa.sun_path - (abstract ? 0 : 1);
  if (name.size() < (abstract ? 2u : 1u) || name.size() > room)
    return make_error(Errc::invalid_argument,
                      "unix socket name '" + shown_value(name, 120) + "': expected " +
                          (abstract ? "'@' and an abstract name" : "a path") + " of 1 to " +
                          std::to_string(room - (abstract ? 1 : 0)) + " characters");
  std::memcpy(a.sa.sun_path, name.data(), name.size());
  if (abstract) a.sa.sun_path[0] = '\0';
  a.len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (abstract ? 0 : 1));
  return a;
}

Result<ucred> peer_cred(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return sys_error(Errc::connection, "SO_PEERCRED");
  return cred;
}

Result<uid_t> peer_uid(int fd) {
  auto cred = peer_cred(fd);
  DP_TRY(cred);
  return cred->uid;
}

}  // namespace dp
