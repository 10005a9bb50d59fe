// What a task knows about its place in the data-parallel job, read from the
// environment the SPANK plugin injected (or torchrun-style variables, or
// nothing: a single process of world 1).
#pragma once

#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp {

struct Context {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;  // MASTER_ADDR
  int master_port = 0;      // MASTER_PORT
  std::string rdv_addr;     // DP_RDV_ADDR "host:port" of dp-rendezvousd, empty if none
  std::string secret;       // DP_RDV_SECRET; never printed
  std::string job_id;       // DP_JOB_ID
  std::string step_id;      // DP_STEP_ID
  std::vector<int> tiles;   // DP_TILES: this task's accelerator tiles
  int tiles_per_task = 0;   // --dp-tiles of DP_OPTIONS (srun's options); 0: none

  static Result<Context> from_environment();

  // The CUDA device this task drives, given how many the process sees: the
  // first of its tiles (renumbered from 0 when the mask is already applied),
  // else LOCAL_RANK. The NCCL communicator and the trainer both ask here, so
  // they never pick different devices. Errc::unavailable when visible is 0.
  Result<int> cuda_device(int visible) const;

  // The host whose route names this task's address for its peers: MASTER_ADDR,
  // except where it is a loopback address in a step with a rendezvous daemon
  // (a task of a step that restarts in place is handed its node agent's
  // PyTorch store, on 127.0.0.1): then the daemon's host, which every node
  // reaches. Empty: neither is known (a single process).
  std::string route_host() const;
};

}  // namespace dp
