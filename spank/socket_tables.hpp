// The kernel's TCP socket tables (/proc/net/tcp and tcp6), read bounded: they
// name the uid of every listening socket, so a taken MASTER_PORT is said with
// its holder. Any user can make them megabytes long, and root reads them
// (only on an error path), so at most kMaxSocketTableBytes of each is read and
// kMaxSocketTableLines lines parsed; a cut result says so.
#pragma once

#include <cstddef>
#include <string>

#include "dp/port_holders.hpp"

namespace dp::spank {

struct SocketTables {
  std::string text;
  bool cut = false;  // a table was longer than read
};

// Appends at most max_bytes of the table at `path` to `into`, ending after its
// last whole line. A table that cannot be read adds nothing.
void read_socket_table(const char* path, size_t max_bytes, SocketTables& into);

// Who holds a port of [lo, hi] on this node (this network namespace).
PortHolders port_holders_here(int lo, int hi);

// Who holds `port`, for a message's parentheses: "held by uid 1002" (every
// uid whose socket the tables show), or where they show none (a socket bound
// but not listening is not in them) a sentence saying why it is unnamed.
std::string port_holder_text(int port);

}  // namespace dp::spank
