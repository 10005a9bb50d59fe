// Reaching the step's daemon (TCP) or the node's agent (its abstract unix
// socket) and proving the secret: one connection, retried with backoff
// under the caller's connect_timeout while the failure may pass (refused,
// timed out, a full daemon); at once when it cannot (another user's
// socket, another network namespace, a wrong secret).
#pragma once

#include "client_options.hpp"
#include "dp/result.hpp"
#include "dp/unique_fd.hpp"
#include "reply_reader.hpp"

namespace dp {

struct Linked {
  UniqueFd socket;
  rdv::ReplyReader reader;  // what the hello left buffered (a push right behind its reply)
};

// `o` checked by RendezvousClient::connect; o.agent_socket set: the agent.
Result<Linked> connect_and_hello(const ClientOptions& o);

}  // namespace dp
