// Who holds the ports of a range, from the kernel's socket tables
// (/proc/net/tcp and /proc/net/tcp6, whose every line carries the owner's
// uid): so a MASTER_PORT that another user took is named as held, and by
// whom, instead of "no free port". Pure parsing; the caller reads, bounded
// (any user can make the tables megabytes long by opening sockets).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace dp {

// At most this much of each table is read, and this many of its lines
// parsed: a node's own listeners come first in the kernel's order, and
// root reads these tables only to name who took a port.
inline constexpr size_t kMaxSocketTableBytes = 1 << 20;
inline constexpr size_t kMaxSocketTableLines = 8'192;

struct PortHolders {
  std::map<unsigned, int> by_uid;  // uid -> how many ports of the range
  // The tables were cut (the reader's byte bound or kMaxSocketTableLines):
  // a holder may be missing.
  bool partial = false;
  // A connection of the range is in TIME_WAIT: one whose socket had no
  // SO_REUSEADDR keeps every binder out for a minute, with nobody to name.
  bool time_wait = false;
};

// Ports of [lo, hi] held by a listening TCP socket (or one shown bound; a
// connection's local end is no hold), by uid, from at most max_lines lines.
// Malformed lines are skipped. `cut` marks text the reader already cut short.
PortHolders port_holders(std::string_view proc_net_tcp, int lo, int hi, bool cut = false,
                         size_t max_lines = kMaxSocketTableLines);
// "uid 1002 (20 ports), uid 0 (1 port)", most ports first; a partial result
// says so. Empty when none was seen.
std::string holders_text(const PortHolders& holders);

}  // namespace dp
