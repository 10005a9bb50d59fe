// Who holds the ports of a range, from the kernel's socket table
// (tcp_sockets.hpp: every socket carries its owner's uid): so a MASTER_PORT
// that another user took is named as held, and by whom, instead of "no free
// port". Pure; the caller asks the kernel, bounded (any user can make the
// table long by opening sockets).
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "dp/tcp_sockets.hpp"

namespace dp {

// At most this many sockets of the range are read (the kernel leaves out the
// rest: a table long with other ports' connections cuts nothing); root reads
// the table only to name who took a port.
inline constexpr size_t kMaxHolderSockets = 8'192;
// The states that tell a hold: listening, bound (closed) and TIME_WAIT.
uint32_t holder_states();

struct PortHolders {
  std::map<unsigned, int> by_uid;  // uid -> how many ports of the range
  // The table was cut (more than the reader's bound): a holder may be missing.
  bool partial = false;
  // A connection of the range is in TIME_WAIT: one whose socket had no
  // SO_REUSEADDR keeps every binder out for a minute, with nobody to name.
  bool time_wait = false;
};

// Ports of [lo, hi] held by a listening TCP socket (or one shown bound; a
// connection's local end is no hold), by uid.
PortHolders port_holders(const TcpSockets& table, int lo, int hi);
// "uid 1002 (20 ports), uid 0 (1 port)", most ports first; a partial result
// says so. Empty when none was seen.
std::string holders_text(const PortHolders& holders);

}  // namespace dp
