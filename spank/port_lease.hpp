// MASTER_PORT on the master node when Slurm reserved no ports: a port of the
// site range that binds, leased under a node-local directory so two
// concurrent steps on one node never get the same one.
//
// Runs as root inside slurmstepd, on a node other users share. The lease
// directory is root's alone (0700, checked owner and mode, every path
// component opened without following symlinks), so no other user can read,
// lock or squat a lease. The range is still not a security boundary: any
// user may bind a port of it; the lease only keeps slurm-dp steps apart,
// and the leased port stays bound by us until the step's tasks start.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp::spank {

struct LeaseRequest {
  uint64_t seed = 0;     // where the search starts (random per step)
  std::string tag;       // "<job>.<step>", for people reading the folder
  uid_t owner = 0;       // the job's user, counted against max_per_user
  int max_per_user = 0;  // live leases one user may hold on the node; 0: no cap
  std::chrono::milliseconds lock_wait{5'000};  // bound on waiting for the folder's lock
};

// A held lease: the file in the lease folder plus a socket bound to the
// port (not listening), so nothing else can bind it until hold is dropped.
class PortLease {
 public:
  PortLease() = default;
  PortLease(int port, int dir_fd, std::string name, int hold_fd)
      : port_(port), dir_fd_(dir_fd), name_(std::move(name)), hold_fd_(hold_fd) {}
  PortLease(PortLease&& o) noexcept { *this = std::move(o); }
  PortLease& operator=(PortLease&& o) noexcept;
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  ~PortLease() { release(); }

  int port() const noexcept { return port_; }
  bool held() const noexcept { return dir_fd_ >= 0; }
  bool holding_port() const noexcept { return hold_fd_ >= 0; }
  int hold_fd() const noexcept { return hold_fd_; }  // -1 once dropped
  // Lets the port go (just before the tasks are forked); the lease file stays.
  void drop_hold() noexcept;
  // Removes the lease file (only while it still names this process) and
  // closes everything. Idempotent.
  void release() noexcept;

 private:
  int port_ = 0;
  int dir_fd_ = -1;
  std::string name_;
  int hold_fd_ = -1;
};

// Takes a lease. Messages say what failed and what to do.
Result<PortLease> lease_master_port(const SiteConfig& site, const LeaseRequest& req);

// Opens (creating as needed) the lease folder: every component without
// following symlinks; parents must be root-owned and not writable by others
// (unless sticky); the folder itself ours and 0700 (an older release's 0755
// is tightened). Returns the folder's descriptor.
Result<int> open_lease_dir(const std::string& path);

// A socket (close-on-exec) bound to `port` on every address and not
// listening, so that nobody else can bind it; -1 when the port is taken.
int hold_port(int port);

// True when a TCP listener could bind `port` on every address now (IPv6
// dual-stack where the node has IPv6, else IPv4), the way servers bind.
bool port_binds(int port);

// A start offset from getrandom(): nobody can predict which port a step gets.
uint64_t random_seed();

}  // namespace dp::spank
