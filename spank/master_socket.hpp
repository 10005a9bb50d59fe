// --dp-master-socket=pass: rank 0's task gets MASTER_PORT already bound and
// listening before its program starts, so no other process can take the
// port between slurm-dp's hold and the framework's own server (PyTorch's
// TCPStore takes it as master_listen_fd). Runs in rank 0's task process, as
// the user, just before exec.
#pragma once

#include "dp/result.hpp"

namespace dp::spank {

// The listening descriptor for the program (kept across exec): a duplicate
// of `held`, the leased port slurmstepd kept bound for this task, or where
// there is none (Slurm-reserved or fixed ports) a socket bound to `port` now.
Result<int> master_listen_socket(int held, int port);

}  // namespace dp::spank
