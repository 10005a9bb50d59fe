// The address of this host that routes to a peer: where the tasks on the
// step's nodes can reach a server srun started here.
#pragma once

#include <string>

#include "dp/result.hpp"

namespace dp::spank {

// Connects a UDP socket (no packet is sent) and asks the kernel which local
// address it chose. IPv6 results come in brackets, ready for "addr:port".
Result<std::string> local_address_towards(const std::string& peer);

}  // namespace dp::spank
