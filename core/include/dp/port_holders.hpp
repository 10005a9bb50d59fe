// Who holds the ports of a range, from the kernel's socket tables
// (/proc/net/tcp and /proc/net/tcp6, whose every line carries the owner's
// uid): so a MASTER_PORT range that another user filled is named as held,
// and by whom, instead of "no free port". Pure parsing; the caller reads.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace dp {

// Ports of [lo, hi] held by a TCP socket (bound or listening, not a
// connection's local end), by uid: uid -> how many ports. Malformed lines
// are skipped.
std::map<unsigned, int> port_holders(std::string_view proc_net_tcp, int lo, int hi);
// "uid 1002 (20 ports), uid 0 (1 port)", most ports first; empty when none.
std::string holders_text(const std::map<unsigned, int>& holders);

}  // namespace dp
