// The one accept path of the per-step services: dp-rendezvousd's TCP port
// and report socket, dp-nodeagent's socket for the node's ranks. When the
// listener is readable it accepts up to a batch of connections (non-blocking,
// close-on-exec) and hands each to its owner, who admits or drops it. Out of
// descriptors, it takes one waiting connection off the queue and closes it
// (a spare descriptor makes room), so a listener that stays readable never
// spins the loop.
#pragma once

#include <functional>
#include <string>

#include "dp/result.hpp"
#include "handles.hpp"

namespace dp::service {

class Listener {
 public:
  using Accept = std::function<void(UniqueFd)>;

  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Starts accepting on `fd` (bound, listening, non-blocking) in `base`.
  // `who` names the program in the line logged when out of descriptors.
  Result<void> start(event_base* base, UniqueFd fd, int batch, std::string who, Accept accept);
  int fd() const noexcept { return fd_.get(); }

 private:
  static void on_ready(evutil_socket_t, short, void* arg);
  void accept_some();

  UniqueFd fd_;
  UniqueFd spare_;
  EventPtr ready_;  // after fd_: freed before it is closed
  int batch_ = 0;
  std::string who_;
  Accept accept_;
};

}  // namespace dp::service
