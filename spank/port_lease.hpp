// MASTER_PORT on the master node when Slurm reserved no ports: a port of the
// site range that binds, leased under a node-local directory so two
// concurrent steps on one node never get the same one.
#pragma once

#include <cstdint>
#include <string>

#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp::spank {

struct PortLease {
  int port = 0;
  std::string path;  // the lease file; remove with release_port_lease()
};

// Lease files hold "<pid> <start time> <tag>" of the slurmstepd that took
// them; a lease whose process is gone is stale and reclaimed. One flock on
// the directory serialises concurrent steps on the node.
Result<PortLease> lease_master_port(const SiteConfig& site, uint64_t seed, const std::string& tag);
void release_port_lease(const std::string& path);

// True when a TCP listener could bind `port` on every IPv4 address now.
bool port_binds(int port);

}  // namespace dp::spank
