// The node agent's hello to the daemon, one home for the core and the
// first connection (daemon_hello.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"

namespace dp::agent {

struct NodeHello {
  std::string addr;    // the daemon, host:port
  std::string secret;  // never logged
  std::string host;
  int world_size = 0;
  std::vector<int32_t> ranks;  // ascending
  int node = -1;               // its index in the step (SLURM_NODEID); -1: not said
};

inline constexpr uint64_t kNodeHelloId = 1;

// The hello frame of a node agent answering the daemon's `challenge`, in the
// protocol version both speak, or the refusal naming both versions
// (protocol_version.hpp). The proof covers its ranks; it is empty when
// libcrypto's HMAC failed.
Result<proto::Request> node_hello_request(const NodeHello& h, const proto::Response& challenge);

}  // namespace dp::agent
