// --dp-master-socket=pass: rank 0's task gets MASTER_PORT already bound and
// listening before its program starts, so no other process can take the
// port between slurm-dp's hold and the framework's own server (PyTorch's
// TCPStore takes it as master_listen_fd). Runs in rank 0's task process, as
// the user, just before exec.
#pragma once

#include "dp/result.hpp"
#include "dp/unique_fd.hpp"

namespace dp::spank {

// The listening descriptor for the program (not close-on-exec: the caller
// lets it go to the program): a duplicate of `held`, the port slurmstepd
// kept bound for this task (leased or Slurm-reserved), or where there is
// none (--dp-master-port) a socket bound to `port` now.
Result<UniqueFd> master_listen_socket(int held, int port);

}  // namespace dp::spank
