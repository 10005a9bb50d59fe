// The TCP sockets under a gloo context, so an abort can break them: gloo has
// no way to cancel a pending operation, but a shut-down socket makes every op
// waiting on it fail at once, here and on the peer's side.
#pragma once

#include <sys/socket.h>

#include <mutex>
#include <vector>

namespace gloo {
class Context;
}

namespace dp::detail {

class GlooSockets {
 public:
  // Remembers the local address of each connected pair (after connectFullMesh).
  void record(gloo::Context& ctx, int self_rank);
  // Finds this process's connected sockets bound to exactly those addresses
  // and shuts them down (the fds stay gloo's to close). Idempotent.
  void shut_down();

 private:
  std::mutex m_;
  std::vector<sockaddr_storage> local_;
  bool done_ = false;
};

}  // namespace dp::detail
