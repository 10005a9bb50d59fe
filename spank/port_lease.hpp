// MASTER_PORT on the master node when Slurm reserved no ports: a port of the
// site range that binds, leased under a node-local directory so two
// concurrent steps on one node never get the same one. Also the hold itself
// (hold_port), which Slurm-reserved ports get too.
//
// Runs as root inside slurmstepd, on a node other users share. The lease
// directory is root's alone (0700, checked owner and mode, every path
// component opened without following symlinks), so no other user can read,
// lock or squat a lease. The range is still not a security boundary: any
// user may bind a port of it; the lease only keeps slurm-dp steps apart,
// and the leased port stays bound by us until rank 0 starts its program
// (step_port_hold.hpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dp/result.hpp"
#include "dp/site_config.hpp"
#include "dp/unique_fd.hpp"

namespace dp::spank {

struct LeaseRequest {
  uint64_t seed = 0;  // where the search starts (random per step)
  std::string tag;    // "<job>.<step>": names the step in its lease files
  uid_t owner = 0;    // the job's user, whose leased ports share_ports counts
  // Ports of the range one user's steps may hold leased on the node at once
  // (MASTER_PORT and --dp-ports alike, counted from the lease files); 0: no cap.
  int share_ports = 0;
  std::chrono::milliseconds lock_wait{5'000};  // bound on waiting for the folder's lock
  int dp_port_count = 0;      // the step's --dp-ports, which it leases besides MASTER_PORT
  bool master_fixed = false;  // --dp-master-port: MASTER_PORT is not leased
  // Ports below it are never leased (dp/slurm_reservation.hpp: root binds
  // and hands over no privileged port); the site's range may start lower
  // where an admin raised the kernel's setting.
  int unprivileged_start = 1024;
};

// A step's request under the site's policy: a random start, and no user
// holding more leased ports than the site's lease_share (a quarter of the
// range by default).
LeaseRequest lease_request(const SiteConfig& site, uid_t owner, std::string tag);

// What the step leases, for a message: "MASTER_PORT", "MASTER_PORT and
// --dp-ports=2 (3 ports)", "--dp-ports=2 (2 ports)".
std::string lease_need_text(const LeaseRequest& req);

// A held lease: the file in the lease folder plus a socket bound to the
// port (not listening), so nothing else can bind it until the hold goes.
class PortLease {
 public:
  PortLease() = default;
  PortLease(int port, UniqueFd dir, std::string name, UniqueFd hold)
      : port_(port), dir_(std::move(dir)), name_(std::move(name)), hold_(std::move(hold)) {}
  PortLease(PortLease&& o) noexcept { *this = std::move(o); }
  PortLease& operator=(PortLease&& o) noexcept;
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  ~PortLease() { release(); }

  int port() const noexcept { return port_; }
  bool held() const noexcept { return static_cast<bool>(dir_); }
  bool holding_port() const noexcept { return static_cast<bool>(hold_); }
  int hold_fd() const noexcept { return hold_.get(); }  // -1 once dropped or taken
  // The bound socket, for whoever holds the port from now on (the lease file stays).
  UniqueFd take_hold() noexcept { return std::move(hold_); }
  // Lets the port go; the lease file stays.
  void drop_hold() noexcept { hold_.reset(); }
  // Removes the lease file (only while it still names this process) and
  // closes everything. Idempotent.
  void release() noexcept;

 private:
  int port_ = 0;
  UniqueFd dir_;
  std::string name_;
  UniqueFd hold_;
};

// Takes one lease. Messages say what failed and what to do.
Result<PortLease> lease_master_port(const SiteConfig& site, const LeaseRequest& req);

// The step's leases (MASTER_PORT unless req.master_fixed, then its
// req.dp_port_count), all or none under one hold of the folder's lock: the
// user's share is checked once for all of them, and a failure releases those
// taken before it. A refusal names who holds the range's ports, counted from
// the lease files (slurm-dp's holds do not listen: the kernel's tables cannot
// name them).
Result<std::vector<PortLease>> lease_ports(const SiteConfig& site, const LeaseRequest& req);

// Opens (creating as needed) the lease folder: every component without
// following symlinks; parents must be root-owned and not writable by others
// (unless sticky); the folder itself ours and 0700 (an older release's 0755
// is tightened). Returns the folder's descriptor.
Result<UniqueFd> open_lease_dir(const std::string& path);

// A socket (close-on-exec) bound to `port` on every address and not
// listening, so that nobody else can bind it; empty when the port is taken.
UniqueFd hold_port(int port);

// True when a TCP listener could bind `port` on every address now (IPv6
// dual-stack where the node has IPv6, else IPv4), the way servers bind.
bool port_binds(int port);

// net.ipv4.ip_unprivileged_port_start of this node's network namespace (root
// reads its own /proc/sys, bounded); the kernel's default 1024 where it cannot
// be read (kernels before 4.11 have no such setting).
int unprivileged_port_start();

// A start offset from getrandom(): nobody can predict which port a step gets.
uint64_t random_seed();

}  // namespace dp::spank
