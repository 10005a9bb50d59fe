// What the node agent's fuzz targets share: the agent's settings and a core
// whose daemon link is up (challenge and hello answered), so every input
// reaches the code under test instead of the hello.
#pragma once

#include "agent_core.hpp"
#include "fuzz_harness.hpp"

namespace dp::fuzz {

inline agent::AgentConfig agent_config() {
  agent::AgentConfig cfg;
  cfg.secret = kSecret;
  cfg.host = "fuzz";
  cfg.world_size = 4;
  cfg.node_ranks = {0, 1};
  cfg.make_nonce = fixed_nonce;  // make_seeds-style proofs can use it
  return cfg;
}

inline void link_ready(agent::AgentCore& core) {
  proto::Response challenge;
  challenge.set_challenge(fixed_nonce());
  core.on_daemon_response(challenge, kStartTime);
  proto::Response hello_ok;
  hello_ok.set_id(1);
  core.on_daemon_response(hello_ok, kStartTime);
}

}  // namespace dp::fuzz
