// What slurmstepd (root) and dp-nodeagent (the job's user) say to each other
// over two pipes, never argv or the environment: root writes the settings
// (key=value lines, then an empty line) and later one control line per task
// that ended; the agent answers one line, "READY <port> <socket>" or
// "ERROR <text>", and closes its end. Root closing its end ends the agent.
// Linked into the plugin and the agent, so both sides parse the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/master_port.hpp"
#include "dp/result.hpp"

namespace dp::agent {

inline constexpr size_t kMaxSettingsBytes = 64 * 1024;
inline constexpr size_t kMaxSocketName = 100;  // "@" + name, well under sun_path

enum class MasterPort : uint8_t {
  none,     // MASTER_PORT is known on every node (--dp-master-port, Slurm's reservation)
  publish,  // the master node: publish `master_value` (a port, or '!' and the failure)
  fetch,    // the other nodes: fetch the master node's value
};

struct AgentSettings {
  std::string addr;    // the daemon, host:port
  std::string secret;  // never logged
  std::string host;    // this node's name
  uint32_t job = 0, step = 0;
  int world_size = 0;
  std::vector<int32_t> ranks;  // this node's global ranks
  MasterPort master = MasterPort::none;
  std::string master_value;
  std::chrono::milliseconds port_wait{60'000};
};

std::string format_settings(const AgentSettings& s);
Result<AgentSettings> parse_settings(std::string_view text);

// The agent's answer to root.
struct AgentAnswer {
  int port = 0;        // 0: none exchanged (MasterPort::none)
  std::string socket;  // "@name": the abstract socket the node's ranks connect to
};
std::string format_answer(const Result<AgentAnswer>& a);
// Root's side: the port in range, the name of the allowed characters and length.
Result<AgentAnswer> parse_answer(std::string_view line);

// "rank R exited status S" (S: the wait status slurmstepd saw).
std::string format_task_exit(int rank, int wait_status);
std::optional<std::pair<int, int>> parse_task_exit(std::string_view line);

// The value the master node publishes when it has no port: '!' then why.
inline constexpr char kFailureMark = '!';
// How every node words the master node's failure; root passes a message
// holding it on as it is, from this phrase on.
inline constexpr const char* kMasterFailed = "the master node could not set up the step: ";
using ::dp::kMasterPortKey;

}  // namespace dp::agent
