// The node agent's way into the step's daemon: connect, read the challenge,
// send the node's hello, read the reply; tried again with backoff and jitter
// until the deadline when the daemon is unreachable, full, or evicted the
// connection before its hello (a stranger flooding the port), like the rank
// client. A refusal the daemon means (wrong secret, the step aborted) is not
// retried: its reply goes to the core, which names the cause.
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "handles.hpp"
#include "node_hello.hpp"
#include "reply_reader.hpp"

namespace dp::agent {

struct DaemonLink {
  service::UniqueFd fd;     // connected, non-blocking
  rdv::ReplyReader reader;  // with whatever arrived after the reply
  proto::Response reply;    // the hello's: OK, or a refusal the core handles
};

struct HelloRetry {
  std::chrono::steady_clock::time_point deadline;
  std::chrono::milliseconds first_backoff{20};
  std::chrono::milliseconds max_backoff{1'000};
  std::chrono::milliseconds attempt{5'000};  // one connect, or one reply, at most
  // Set by another thread: no further attempt starts (a reconnect's owner leaves).
  const std::atomic<bool>* cancel = nullptr;
};

Result<DaemonLink> hello_daemon(const NodeHello& h, const HelloRetry& retry);

}  // namespace dp::agent
