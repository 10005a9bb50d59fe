// What slurmstepd (root) and dp-nodeagent (the job's user) say to each other
// over two pipes, never argv or the environment: root writes the settings
// (key=value lines, then an empty line) and later one control line per task
// that started (its pid) and per task that ended; the agent answers one line, "READY <port>
// <socket> [store=<port>] [dp_ports=<a,b,...>] [ras=<port>] [fr=<folder>]", "MASTER_FAILED <node>
// <reason>" or "ERROR <text>", and closes its end. Root closing its end ends the agent. Linked into
// the plugin and the agent, so both sides parse the same way.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/master_port.hpp"
#include "dp/proc_stat.hpp"  // read_start_ticks, for TaskStart
#include "dp/result.hpp"
#include "dp/site_config.hpp"
#include "dp/step_ports.hpp"

namespace dp::agent {

inline constexpr size_t kMaxSettingsBytes = 64 * 1024;
inline constexpr size_t kMaxSocketName = 100;  // "@" + name, well under sun_path

struct AgentSettings {
  std::string addr;    // the daemon, host:port
  std::string secret;  // never logged
  std::string host;    // this node's name
  uint32_t job = 0, step = 0;
  int world_size = 0;
  std::vector<int32_t> ranks;  // this node's global ranks (a spare's: none)
  int node = -1;               // this node's index in the step (SLURM_NODEID)
  // A step that restarts in place (--dp-spares, --dp-max-restarts): each task
  // is a keeper of its program (spank/task_keeper.hpp, keeper_contract.hpp),
  // and task_ids are Slurm's ids of the node's tasks, in local order (root's
  // control lines name them; ranks follow the node rank the node holds).
  bool keepers = false;
  std::vector<int32_t> task_ids;
  PortsRole master = PortsRole::none;  // the core's decision (step_ports.hpp)
  StepPortsValue published;            // with publish
  std::chrono::milliseconds port_wait{std::chrono::seconds(site_defaults().port_wait_s)};
  // When the step fails: SIGTERM to the node's tasks, SIGKILL this much later
  // (site key kill_grace); with on_failure=keep: signal none.
  std::chrono::milliseconds kill_grace{std::chrono::seconds(site_defaults().kill_grace_s)};
  OnFailure on_failure = OnFailure::end;
  // The site's heartbeat_timeout: the daemon silent this long is gone; a
  // shorter outage is survived (the agent reconnects). 0: no bound.
  std::chrono::milliseconds heartbeat_timeout{
      std::chrono::seconds(site_defaults().heartbeat_timeout_s)};
  // A step with spares (site key fence_after): nothing heard of the daemon
  // this long, the agent kills its node's programs, whole trees, no grace.
  // 0: never.
  std::chrono::milliseconds fence_after{0};
  // The node's task is a per-node launcher (the plugin recognised torchrun or
  // --dp-launcher=torchrun): its workers are watched (launcher_workers.hpp).
  bool watch_workers = false;
  // --dp-store=step: the agent serves the step's PyTorch store to the node's
  // tasks on a loopback TCP port (store_front.hpp) and answers it to root.
  bool serve_store = false;
  // The step's ports the agent holds past rank 0's exec until the program
  // listens on them (port_holds.hpp): their sockets are its descriptors
  // 3, 4, ... in this order (rank 0's node only; at most kMaxHeldPorts).
  std::vector<int> held_ports;
};
inline constexpr size_t kMaxHeldPorts = kMaxStepPorts + 1;  // the coordinator and --dp-ports

std::string format_settings(const AgentSettings& s);
Result<AgentSettings> parse_settings(std::string_view text);

// The agent's answer to root.
struct AgentAnswer {
  int port = 0;        // 0: none exchanged (PortsRole::none, publish)
  std::string socket;  // "@name": the abstract socket the node's ranks connect to
  // Instead of a port and a socket: the master node could not set up the step.
  std::optional<MasterFailure> master_failure;
  // With a socket: the node's PyTorch store on 127.0.0.1 (settings store=step); 0: none.
  int store_port = 0;
  // With a fetched port: the step's --dp-ports, as the master node published them.
  std::vector<int> dp_ports;
  // The node's NCCL ranks' flight-recorder folder and NCCL RAS port
  // (flight_reader.hpp; core's nccl_watch.hpp): empty and 0 when none.
  std::string flight_dir;
  int ras_port = 0;
  // Instead of all the above ("ERROR <text>"): why the agent cannot serve the
  // step. It stays, to report how the node's tasks end.
  std::string refusal;
};
std::string format_answer(const Result<AgentAnswer>& a);
// Root's side: the port in range, the name of the allowed characters and
// length, a master failure's node name one word and its reason printable; an
// ERROR line is a refusal. An error: the line is none of these.
Result<AgentAnswer> parse_answer(std::string_view line);

// "rank R exited status S" (S: the wait status slurmstepd saw).
std::string format_task_exit(int rank, int wait_status);
std::optional<std::pair<int, int>> parse_task_exit(std::string_view line);

// "step end": root ends the agent (the step's end on this node, or its
// refusal) and then closes the control pipe. A close without it is
// slurmstepd's death (killed, its node failing): no clean goodbye.
inline constexpr std::string_view kStepEndLine = "step end";

// "rank R pid P start T": a task of the node was forked (T: its start time
// in clock ticks since boot, /proc/P/stat's 22nd field, read by root while
// the task cannot yet have been reaped), so the agent can tell it from a
// process that reused the pid.
struct TaskStart {
  int rank = 0;
  int pid = 0;
  unsigned long long start_ticks = 0;
};
std::string format_task_start(const TaskStart& t);
std::optional<TaskStart> parse_task_start(std::string_view line);

using ::dp::kStepPortsKey;
using ::dp::read_start_ticks;  // a TaskStart's start time (dp/proc_stat.hpp)

}  // namespace dp::agent
