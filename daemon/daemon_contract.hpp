// What srun (the plugin's srun side, and the rendezvous bench) and
// dp-rendezvousd say to each other: argv carries nothing secret; stdin
// carries the secret line, then (with --listen -) the address the ranks
// route to, then (with --step-nodes -) the step's node addresses; stdout
// carries one answer line, "READY <port> <report socket>" or "ERROR <text>".
// The report socket is the daemon's abstract one, so srun asks it by name at
// the step's end and never looks for it among other users' sockets.
// Linked into the plugin, the daemon and the bench, so all build and read
// these lines the same way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dp/daemon_ports.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"  // OnFailure

namespace dp::daemon {

// The daemon's contract, as srun fills it from the step's options and the
// site's settings; a field left as it is, the daemon's default (the site
// defaults' own, dp/site_config.hpp).
struct LaunchArgs {
  int world_size = 0;
  std::string job_id, step_id;
  int nodes = 0;                      // the step's nodes, one agent each; 0: unknown
  std::string listen = "-";           // "-": the second line of stdin
  ListenRange listen_ports{};         // unset: a port the OS chooses
  bool step_nodes_on_stdin = true;    // the step's node addresses: the last line of stdin
  int64_t heartbeat_timeout_ms = -1;  // -1: the daemon's default
  int64_t hang_timeout_ms = -1;       // -1: the daemon's default; 0: off
  // The user's --dp-hang-timeout set it (not the site's hang_timeout): the
  // hang verdict names the option the user can change.
  bool hang_timeout_by_user = false;
  OnFailure on_failure = OnFailure::end;  // keep: a lost node does not end the step
  bool end_on_hang = false;               // on_hang=end / --dp-on-hang=end
  int notice_fd = -1;                     // srun's stderr in the daemon; -1: none
  int straggler_pct = -1;  // the straggler threshold (%); -1: the daemon's default; 0: off
  // Restarts in place (--dp-spares, --dp-max-restarts): off while both are 0.
  int spares = 0, max_restarts = 0, tasks_per_node = 0;
  int64_t restart_stop_ms = -1;  // -1: the daemon's default
  bool restart_programs = true;  // false: per-node launchers restart their own workers
  // With spares: a node this silent is replaced, and a lost node's spare
  // starts only once its programs are dead or fence_ms passed since it was
  // heard (site keys spare_timeout, fence_after). -1: the daemon's default.
  int64_t spare_silence_ms = -1, fence_ms = -1;
};

// The daemon's arguments after its path.
std::vector<std::string> format_arguments(const LaunchArgs& a);
// The stdin lines after the secret's: the listen address (when listen is
// "-") and the node addresses, space-separated.
std::string format_addresses(const std::string& listen, const std::vector<std::string>& nodes);

struct DaemonAnswer {
  int port = 0;               // where the ranks and agents connect
  std::string report_socket;  // "@name"; empty: the daemon has none (it said why on stderr)
};
std::string format_answer(const Result<DaemonAnswer>& a);
// srun's side: READY's port in range and socket name checked; ERROR's text
// comes back as an Errc::unavailable error; anything else is a protocol error.
Result<DaemonAnswer> parse_answer(std::string_view line);

}  // namespace dp::daemon
