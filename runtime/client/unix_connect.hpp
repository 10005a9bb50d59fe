// The node agent's local socket: an abstract AF_UNIX name, written
// with a leading '@' (DP_AGENT_SOCKET). An abstract name has no file mode,
// so both ends check the other's uid (dp/unix_socket.hpp's peer_uid): only
// the step's user may talk to its agent, and a rank talks only to an agent of
// its own user.
#pragma once

#include <string>

#include "dp/result.hpp"

namespace dp::rdv {

// This process's network namespace as /proc/self/ns/net names it
// ("net:[4026531840]"); empty when /proc cannot tell.
std::string network_namespace();
// Connects (a non-blocking socket, as tcp_connect_once gives; a unix connect
// never waits) and checks that the listener runs as this process's uid.
// An abstract name lives in one network namespace: `agent_netns` is the
// agent's (DP_AGENT_NETNS); a process in another one, such as a container
// with a network of its own, cannot connect, and the error (unavailable,
// not worth retrying) says so and names the container options that do it.
Result<int> unix_connect_once(const std::string& at_name, const std::string& agent_netns = {});

}  // namespace dp::rdv
