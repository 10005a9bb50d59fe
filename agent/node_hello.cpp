#include "node_hello.hpp"

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace dp::agent {

Result<proto::Request> node_hello_request(const NodeHello& n, const proto::Response& challenge) {
  auto version = rdv::version_to_say(rdv::protocol_range(), challenge.protocol_version(),
                                     {"this node's dp-nodeagent", "slurm-dp on the compute nodes"},
                                     rdv::daemon_side());
  DP_TRY(version);
  const std::string& nonce = challenge.challenge();
  proto::Request req;
  req.set_id(kNodeHelloId);
  auto* h = req.mutable_hello();
  h->set_protocol_version(*version);
  h->set_role(proto::ROLE_NODE);
  h->set_rank(n.node);  // a node agent's rank field is its node's index
  h->set_world_size(n.world_size);
  h->set_host(n.host);
  for (int32_t r : n.ranks) h->add_node_ranks(r);
  h->set_proof(
      rdv::hello_proof(n.secret, nonce, proto::ROLE_NODE, n.node, n.world_size, n.host, n.ranks));
  return req;
}

}  // namespace dp::agent
