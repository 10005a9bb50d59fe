// Which local address reaches a peer: the interface Gloo must listen on so
// that the master can connect back, and the address srun advertises for the
// daemon it started. Asking the kernel's routing table avoids a hard-coded
// "lo" or eth0.
#pragma once

#include <string>

#include "dp/result.hpp"

namespace dp::net {

// Numeric address (IPv4 or IPv6, no brackets) of the local interface the
// kernel would use to send to host. No packet is sent.
Result<std::string> local_address_towards(const std::string& host);

}  // namespace dp::net
