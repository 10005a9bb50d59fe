// The TCP sockets under a gloo context, so an abort can break them: gloo has
// no way to cancel a pending operation, but a shut-down socket makes every op
// waiting on it fail at once, here and on the peer's side.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gloo {
class Context;
namespace transport {
class Device;
}
}  // namespace gloo

namespace dp::detail {

// gloo's TCP device on `host`, its network thread `loop_nice` steps below the
// caller's priority. That thread polls while a message waits for its
// receiver to post a buffer (level-triggered EPOLLIN); at equal priority, on
// a rank confined to one CPU, it holds off the very thread it waits for until
// the scheduler's next tick: 4 ms per collective. The thread is born of a
// short-lived helper that lowered its own priority (Linux threads inherit
// it, and an unprivileged thread cannot raise its own back). Throws as gloo does.
std::shared_ptr<gloo::transport::Device> create_device(const std::string& host, int loop_nice);

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
