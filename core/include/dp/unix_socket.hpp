// A unix socket's address and its peer's uid: the one builder of an address
// ("@name" abstract, or a path) and the one SO_PEERCRED check, for the node
// agent's socket (runtime/client/unix_connect.hpp, agent/), the daemon's
// report socket (daemon/report_socket.cpp) and its readers
// (proto/step_socket.cpp). An abstract name has no file mode: the peer's uid
// is all that guards it, both ways.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <string>

#include "dp/result.hpp"

namespace dp {

struct UnixAddress {
  sockaddr_un sa{};
  socklen_t len = 0;  // what bind and connect take
  bool abstract() const { return sa.sun_path[0] == '\0'; }
};

// "@name": abstract (a leading NUL, and the length says where the name
// ends); anything else a path. Errc::invalid_argument, naming it, when the
// name is empty or longer than sun_path holds.
Result<UnixAddress> unix_address(const std::string& name);

// The process at the other end of a connected unix socket (its pid, uid and
// gid when it connected), and its uid alone.
Result<ucred> peer_cred(int fd);
Result<uid_t> peer_uid(int fd);

}  // namespace dp
