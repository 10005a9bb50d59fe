// Starts and stops dp-rendezvousd for one step (srun side).
//
// Contract with the daemon (daemon/daemon_contract.hpp): argv carries no
// secret; the secret is one hex line on the child's stdin, the address to
// listen on (the one the ranks route to) the next line, the step's node
// addresses the last; the child answers "READY <port> <report socket>" or
// "ERROR <message>" (a file limit too low for the step, say).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "daemon_contract.hpp"
#include "dp/result.hpp"
#include "dp/unique_fd.hpp"

namespace dp::spank {

// The daemon srun starts: its path, its contract as srun fills it (argv:
// daemon_contract.hpp), and how srun itself runs it.
struct DaemonLaunch {
  std::string path;
  dp::daemon::LaunchArgs args;  // notice_fd is the launcher's own
  bool show_stderr = false;
  int ready_timeout_ms = 10'000;
};

struct RunningDaemon {
  pid_t pid = -1;
  int port = 0;
  std::string report_socket;  // "@name" srun asks at the step's end; empty: none
};

// 256 bits from getrandom(), as 64 hex digits.
Result<std::string> make_secret();

// A daemon forked and given its secret, not yet known to be listening.
struct StartingDaemon {
  pid_t pid = -1;
  UniqueFd answer;  // its stdout
  std::string path;
  UniqueFd input;  // its stdin, open until the listen address is sent
};

// Forks the daemon and hands it the secret; returns at once so the caller
// can do other work while the daemon starts.
Result<StartingDaemon> start_daemon(const DaemonLaunch& req, const std::string& secret);
// The address the daemon binds (the one the ranks route to; IPv4 or IPv6,
// without brackets), then the step's node addresses (Slurm's NodeAddr: their
// connections without hello get a budget of their own). Closes its stdin; a
// daemon that already failed says why in await_daemon's answer.
void send_listen_address(StartingDaemon& d, const std::string& address,
                         const std::vector<std::string>& node_addresses = {});
// Waits for the daemon's READY; on any failure the daemon is stopped.
Result<RunningDaemon> await_daemon(StartingDaemon& d, int timeout_ms);
// Stops a daemon that is not needed after all.
void abandon_daemon(StartingDaemon& d);

// start_daemon + send_listen_address + await_daemon.
Result<RunningDaemon> launch_daemon(const DaemonLaunch& req, const std::string& secret,
                                    const std::string& listen_address,
                                    const std::vector<std::string>& node_addresses = {});

// SIGTERM, then SIGKILL if it has not exited within grace_ms; always reaps.
void stop_daemon(pid_t pid, int grace_ms = 2'000);

}  // namespace dp::spank
