// What a rendezvous client is told: where the daemon or the node's agent
// is, who it is, its secret and its timings. Below both the client
// (rendezvous_client.hpp) and its connection (client_connect.hpp), which
// take it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "dp/params.hpp"
#include "frame_limits.hpp"

namespace dp {

enum class PeerRole {
  rank,   // a task of the step; its death aborts the job
  agent,  // slurmstepd-side plugin, tools, benchmarks: may leave without aborting
};

struct ClientOptions {
  std::string host;   // daemon address (DP_RDV_ADDR host part)
  uint16_t port = 0;  // daemon port
  // DP_AGENT_SOCKET ("@name"): the node agent's abstract socket. When set,
  // the client talks to it instead of host:port, with the same protocol.
  std::string agent_socket;
  // DP_AGENT_NETNS: the agent's network namespace; a task in another one is
  // told so (unix_connect.hpp) instead of retrying.
  std::string agent_netns;
  std::string secret;  // job secret (DP_RDV_SECRET); never logged
  PeerRole role = PeerRole::rank;
  int rank = -1;  // with role == rank
  int world_size = 0;
  std::string hostname;  // reported to the daemon, used in failure messages
  std::chrono::milliseconds connect_timeout{30'000};  // total, with retry + backoff
  std::chrono::milliseconds call_timeout{60'000};     // default per call
  // Keep well under the step's bound of silence (the site's heartbeat_timeout,
  // which srun passes on as DP_RDV_SILENCE_MS): a rank silent that long while
  // others are heard is dead.
  std::chrono::milliseconds heartbeat_interval{1'000};
  // The daemon pings every second; nothing from it for this long (counted
  // only while this process runs) means it or its host is stopped or gone:
  // every pending and later call fails, and on_abort() is told. 0: never.
  std::chrono::milliseconds daemon_silence_limit{param_spec(Param::rdv_silence_ms).def};
  // Largest reply frame accepted; a larger one fails the connection as a
  // protocol error before it is buffered. The SPANK plugin's port exchange
  // uses a few KiB: it only ever reads a port number. The default is the
  // largest value a daemon may store (--max-value-bytes), and room.
  uint32_t max_reply_frame = rdv::kMaxFrameBytes;
};

}  // namespace dp
