// A hello request as a rank or a node agent signs it (proto/hello_proof.hpp),
// for the tests of whoever checks one: the daemon's broker, the node agent.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "dp/proto/rendezvous.pb.h"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace dp::test {

// Request id 1. A node agent's proof (ROLE_NODE) covers its node_ranks.
inline proto::Request signed_hello(const std::string& secret, const std::string& nonce,
                                   proto::Role role, int rank, int world_size,
                                   const std::string& host,
                                   std::span<const int32_t> node_ranks = {}) {
  proto::Request r;
  r.set_id(1);
  auto* h = r.mutable_hello();
  h->set_protocol_version(rdv::protocol_range().newest);
  h->set_role(role);
  h->set_rank(rank);
  h->set_world_size(world_size);
  h->set_host(host);
  for (int32_t x : node_ranks) h->add_node_ranks(x);
  h->set_proof(role == proto::ROLE_NODE
                   ? rdv::hello_proof(secret, nonce, role, rank, world_size, host, node_ranks)
                   : rdv::hello_proof(secret, nonce, role, rank, world_size, host));
  return r;
}

}  // namespace dp::test
