#include "master_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "port_lease.hpp"

namespace dp::spank {

Result<int> master_listen_socket(int held, int port) {
  const std::string what = "MASTER_PORT " + std::to_string(port);
  const int bound = held >= 0 ? held : hold_port(port);
  if (bound < 0)
    return make_error(Errc::unavailable,
                      what +
                          " is bound by another process on this node, so "
                          "--dp-master-socket=pass cannot hand it to rank 0; start the step "
                          "again, or ask the site for Slurm-reserved ports (MpiParams=ports=)");
  // F_DUPFD leaves close-on-exec off: the copy is the program's.
  const int fd = fcntl(bound, F_DUPFD, 3);
  const int dup_errno = errno;
  if (bound != held) close(bound);
  if (fd < 0)
    return make_error(Errc::internal, "cannot pass " + what + ": " + std::strerror(dup_errno));
  if (listen(fd, SOMAXCONN) != 0) {
    const int e = errno;
    close(fd);
    return make_error(Errc::internal, "cannot listen on " + what + ": " + std::strerror(e));
  }
  return fd;
}

}  // namespace dp::spank
