// The step's ports that rank 0's node keeps held past rank 0's exec
// (step_ports.hpp, PortHold::to_listen): sockets slurmstepd bound at the
// step's set-up, with SO_REUSEPORT and owned by the job's user, handed to the
// agent at descriptors 3, 4, ... in the order of its settings' held_ports.
// Another user cannot bind such a port while the agent holds it; the step's
// program can, with SO_REUSEPORT (gRPC servers: JAX's coordinator), and a
// bound socket that does not listen takes none of its connections. Each hold
// goes as soon as a listener of the agent's own uid is on its port (the
// program's server, which keeps the port from then on), or with the agent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "dp/unique_fd.hpp"

namespace dp::agent {

class PortHolds {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kCheckEvery{250};

  PortHolds() = default;
  // Takes descriptors first_fd, first_fd + 1, ... for `ports`, each checked
  // to be a TCP socket bound to its port (close-on-exec from now on); one
  // that is not is left alone and named in `notes`.
  static PortHolds adopt(const std::vector<int>& ports, int first_fd,
                         std::vector<std::string>& notes);

  // At most every kCheckEvery: lets go of the ports on which a socket of
  // `uid` listens now, and returns them.
  std::vector<int> release_listened(Clock::time_point now, uid_t uid);
  std::vector<int> ports() const;
  bool empty() const noexcept { return held_.empty(); }

 private:
  std::vector<std::pair<int, UniqueFd>> held_;  // port, its socket
  Clock::time_point next_check_{};
};

}  // namespace dp::agent
