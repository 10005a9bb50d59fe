// Who holds a port of this node, from the kernel's socket table
// (dp/tcp_sockets.hpp): it names the uid of every listening socket, so a
// taken MASTER_PORT is said with its holder. Any user can make the table
// long, and root reads it (only on an error path), so at most
// kMaxHolderSockets sockets of the asked ports are read; a cut result says so.
#pragma once

#include <string>

#include "dp/port_holders.hpp"

namespace dp::spank {

// Who holds a port of [lo, hi] on this node (this network namespace); none
// named when the kernel cannot answer.
PortHolders port_holders_here(int lo, int hi);

// Who holds `port`, for a message's parentheses: "held by uid 1002" (every
// uid whose socket the table shows), or where it shows none (a socket bound
// but not listening is not in it) a sentence saying why it is unnamed.
std::string port_holder_text(int port);

}  // namespace dp::spank
