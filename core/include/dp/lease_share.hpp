// A user's share of a node's leased ports (the plugin's lease_share= rule):
// how many ports of the site's range one user's steps may hold leased at
// once, so that one user cannot take the whole range from the others.
// Pure: the lease folder's counts in (spank/port_lease.cpp reads them under
// the folder's lock), a refusal that names the cap and the fix out.
#pragma once

#include <map>
#include <string>

#include "dp/result.hpp"

namespace dp {

// The live leases of a node's lease folder.
struct LeaseHolders {
  std::map<long, int> by_uid;              // ports per uid; -1: an older release's (no uid)
  std::map<std::string, int> owner_steps;  // the asking user's, by step tag ("pid N" without one)
};

struct ShareAsk {
  long owner = 0;       // the job's user
  std::string tag;      // "<job>.<step>": this step's own earlier leases never count
  int share_ports = 0;  // the cap; 0: none
  int count = 0;        // the ports this step asks for now
  std::string need;     // what they are for: "MASTER_PORT and --dp-ports=3 (4 ports)"
};

// Room for `ask.count` more ports beside what the user's other steps hold,
// or why not and what to do.
Result<void> check_lease_share(const LeaseHolders& held, const ShareAsk& ask);

// "uid 1001 (9 ports), uid 1002 (1 port)", most ports first.
std::string lease_holders_text(const LeaseHolders& held);

}  // namespace dp
