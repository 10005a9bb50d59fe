// Starts and stops dp-rendezvousd for one step (srun side).
//
// Contract with the daemon: argv carries no secret; the secret is one hex
// line on the child's stdin; the child answers "READY <port>" or
// "ERROR <message>" as one line on stdout.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "dp/result.hpp"

namespace dp::spank {

struct DaemonRequest {
  std::string path;
  int world_size = 0;
  uint32_t job_id = 0;
  uint32_t step_id = 0;
  int idle_timeout_s = 0;  // 0: the daemon's default
  int hang_timeout_s = -1; // -1: the daemon's default; 0: off
  bool show_stderr = false;
  int ready_timeout_ms = 10'000;
};

struct RunningDaemon {
  pid_t pid = -1;
  int port = 0;
};

// 256 bits from getrandom(), as 64 hex digits.
Result<std::string> make_secret();

// A daemon forked and given its secret, not yet known to be listening.
struct StartingDaemon {
  pid_t pid = -1;
  int answer_fd = -1;  // its stdout
  std::string path;
};

// Forks the daemon and hands it the secret; returns at once so the caller
// can do other work while the daemon starts.
Result<StartingDaemon> start_daemon(const DaemonRequest& req, const std::string& secret);
// Waits for "READY <port>"; on any failure the daemon is stopped.
Result<RunningDaemon> await_daemon(StartingDaemon& d, int timeout_ms);
// Stops a daemon that is not needed after all.
void abandon_daemon(StartingDaemon& d);

// start_daemon + await_daemon.
Result<RunningDaemon> launch_daemon(const DaemonRequest& req, const std::string& secret);

// SIGTERM, then SIGKILL if it has not exited within grace_ms; always reaps.
void stop_daemon(pid_t pid, int grace_ms = 2'000);

}  // namespace dp::spank
