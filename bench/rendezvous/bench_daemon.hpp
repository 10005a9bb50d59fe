// What the rendezvous benches share: the real dp-rendezvousd started the
// way srun starts it (daemon_contract.hpp), its CPU and peak memory, and the
// simulated nodes' and ranks' source addresses.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dp::bench {

// The step's secret in every bench run (a bench has no one to hide it from).
extern const std::string kSecret;

int64_t now_ns();  // CLOCK_MONOTONIC

struct Daemon {
  pid_t pid = -1;
  uint16_t port = 0;
};
// nodes > 0: the step's ranks come through node agents (--nodes). Exits the
// bench with a message when the daemon does not start.
Daemon start_daemon(const std::string& path, int world, int nodes, int64_t heartbeat_ms);

long vm_hwm_kib(pid_t pid);
// CPU seconds (user + system) the process used so far: a figure that, unlike
// wall time, does not depend on how busy the rest of the machine is.
double cpu_seconds(pid_t pid);

// The source address of peer `index` (host order), in 127.1.0.0/16.
uint32_t source_address(int index, bool node);
// The simulated nodes' addresses, as srun gives the daemon the step's nodes
// (their connections without hello have a budget of their own).
std::vector<std::string> bench_nodes(int nodes);
// A non-blocking TCP connect to 127.0.0.1:port from peer index's own source
// address; the descriptor, or -1.
int connect_from(int index, bool node, uint16_t port);

}  // namespace dp::bench
