#include "master_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "port_lease.hpp"
#include "socket_tables.hpp"

namespace dp::spank {

Result<UniqueFd> master_listen_socket(int held, int port) {
  const std::string what = "MASTER_PORT " + std::to_string(port);
  UniqueFd fresh;
  if (held < 0) fresh = hold_port(port);
  const int bound = held >= 0 ? held : fresh.get();
  if (bound < 0)
    return make_error(Errc::unavailable,
                      what + " is bound by another process on this node (" +
                          port_holder_text(port) +
                          "), so --dp-master-socket=pass cannot hand it to rank 0; "
                          "start the step again, or ask the site for Slurm-reserved ports "
                          "(MpiParams=ports=)");
  // F_DUPFD leaves close-on-exec off: the copy is the program's.
  UniqueFd fd(fcntl(bound, F_DUPFD, 3));
  if (!fd) return make_error(Errc::internal, "cannot pass " + what + ": " + dp::errno_text());

  int rc = listen(fd.get(), SOMAXCONN);
  if (rc != 0 && errno == EADDRINUSE) {
    // Bound over TIME_WAITs (hold_port), whose SO_REUSEADDR the hold then
    // cleared: listen checks the port's owners again and needs it back.
    // Nothing else listens there (the hold keeps binders without it out).
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    rc = listen(fd.get(), SOMAXCONN);
  }
  if (rc != 0)
    return make_error(Errc::internal, "cannot listen on " + what + ": " + dp::errno_text() +
                                          (errno == EADDRINUSE ? " (" + port_holder_text(port) + ")"
                                                               : std::string()));
  // As servers listen: the connections it accepts (and closes first) then
  // leave TIME_WAITs that a later bind with the option may take over; without
  // it they keep every binder, the next step's hold too, out for a minute.
  // Set once listening, so the port is shared with nobody meanwhile.
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  return fd;
}

}  // namespace dp::spank
