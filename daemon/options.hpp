// Command line of dp-rendezvousd. The secret never comes from argv (every
// user can read argv with ps): it is one line of hex on stdin.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "broker.hpp"
#include "dp/daemon_ports.hpp"
#include "dp/result.hpp"

namespace dp::daemon {

struct DaemonOptions {
  int world_size = 0;
  std::string job_id;
  std::string step_id;
  // "-": the second line of stdin (srun learns the route while the daemon starts).
  std::string listen_addr = "0.0.0.0";
  // The ports it may take (srun's SrunPortRange or the site's daemon_ports,
  // named in the error when all are taken); unset: the OS chooses.
  ListenRange listen_ports{};
  int max_connections = 0;  // 0: from the (raised) fd limit
  // The step's node addresses, comma-separated; "-": the next line of stdin
  // (srun's, space-separated). Their connections without hello get a budget
  // of their own (hello_budget.hpp).
  std::string step_nodes;
  BrokerLimits limits;
  int notice_fd = -1;  // srun's stderr; -1: none (the notices go to the log only)
  bool help = false;
};

Result<DaemonOptions> parse_options(const std::vector<std::string>& args);
// Checks one line of hex (at least 128 bits), without echoing it.
Result<std::string> validate_secret(std::string line);
std::string usage_text();

}  // namespace dp::daemon
