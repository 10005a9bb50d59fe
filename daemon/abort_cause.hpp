// Why the step was aborted, and the one table that names it: each way a step
// fails has one word from the event to every view (the daemon's log and its
// abort text, the step report's "how", dp-top's abort_cause line and its
// --json, the reason given to slurmctld) and the verdict the user reads.
// Pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "dp/master_port.hpp"

namespace dp::daemon {

using Clock = std::chrono::steady_clock;

struct AbortCause {
  enum class How : uint8_t {
    lost_connection,  // a rank's connection dropped without goodbye
    silence,          // a rank's heartbeats stopped while others were heard
    refused,          // the daemon closed a peer that broke the protocol or a limit
    explicit_abort,   // a rank or agent asked for the abort
    hang,             // no progress for the hang timeout
    rank_lost,        // a node agent reported one of its tasks gone
    node_lost,        // a node agent's connection ended before all its ranks said goodbye
    node_silent,      // a node agent's heartbeats stopped while other nodes were heard
    user_signal       // no failure: Slurm's signal on the user's request (scancel, Ctrl-C)
  };
  How how = How::explicit_abort;
  int rank = -1;  // -1: not a rank (an agent asked, or unknown)
  std::string host;
  std::optional<int> exit_code, signal;  // rank_lost, when slurmstepd knew them
  std::optional<int> worker_rank;  // rank_lost of a launcher: its worker's; exit is the worker's
  std::optional<int> user_signal;  // user_signal: the signal Slurm delivered
  Clock::time_point when{};
  std::string message;  // the full text every peer gets
  int node = -1;        // the node agent's node index (SLURM_NODEID) it concerns; -1: none
  // The node's agent closed its link (an end or reset came from its side):
  // the agent is gone, and its keepers end their programs as theirs close.
  bool peer_closed = false;
  // The master node's agent aborted because it could not set up the step:
  // every ABORTED reply carries it, so each node names the cause typed.
  std::optional<MasterFailure> master_failure;
};

// The word every view prints for `how` ("lost_connection", "refused", ...).
const char* how_name(AbortCause::How how) noexcept;
// The verdict that ended the step, as the user reads it: task_exit,
// node_lost, node_silent, hang, rank_silent (a libdp rank alone),
// requested; for user_signal the signal's (cancelled, interrupted, signalled).
const char* how_verdict(AbortCause::How how, int user_signal = 0) noexcept;

}  // namespace dp::daemon
