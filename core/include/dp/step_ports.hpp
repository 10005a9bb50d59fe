// The step's ports on rank 0's node: the coordinator port (MASTER_PORT in a
// step whose rank 0 hosts PyTorch's store, and JAX's coordinator in every
// step) and --dp-ports=N more for the step's other services (DP_PORTS).
// One name from option to environment: the user's --dp-ports and DP_PORTS
// are `dp_ports` in the code, the proto and the agent's settings, so one grep
// finds every step of them; `dp_port_count` where it is how many a step asked
// for (Options, LayoutPlan). Not `ports`: that is the site's range (ports= in
// plugstack.conf), an admin-facing name that stays.
// Every one is chosen and held on the master node the way MASTER_PORT is.
// Pure: the plugin chooses and holds them; this says how many, checks what
// a user or Slurm gave, which node publishes or fetches them, and what each
// task is told.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp {

// How long rank 0's node holds one of the step's ports. The kernel lets a
// socket bind beside another on the same port only when both set SO_REUSEPORT
// and belong to one uid, and a bound socket that does not listen is given no
// connection. So a hold bound as the job's user with SO_REUSEPORT keeps every
// other user out and lets the program's own server in, if that server sets
// SO_REUSEPORT (gRPC servers do by default: JAX's coordinator); one that does
// not (PyTorch's TCPStore, Ray, Go's servers) fails against it with "address
// already in use", so for those the hold ends at rank 0's exec.
enum class PortHold {
  to_exec,    // until rank 0 starts its program; free until the program binds it
  to_listen,  // past exec, as the job's user with SO_REUSEPORT, until a listener of the
              // user's is on the port (the node agent watches) or the step ends
  passed,     // handed to rank 0 bound and listening (--dp-master-socket=pass)
};

// The step's coordinator port (MASTER_PORT / JAX_COORDINATOR_ADDRESS) or
// one of its ports (--dp-ports, DP_PORTS).
enum class StepPort { coordinator, dp_port };

// The hold of `port`: --dp-master-socket's choice (close, pass, share) or,
// unset, to_exec, but for the coordinator port of a step whose store the node
// agents serve (only JAX binds it then): to_listen.
PortHold port_hold(StepPort port, const Options& opts, bool step_store);

// The hold for --dp-explain: "to rank 0's start", ...
const char* port_hold_text(PortHold hold) noexcept;

struct StepPorts {
  int coordinator = 0;        // 1..65535
  std::vector<int> dp_ports;  // --dp-ports, in order (DP_PORTS)
};

// --dp-ports as the site allows it: at most max_ports=, and with the
// site's range in use (no --dp-master-port), at most what the range holds
// besides MASTER_PORT. The refusal names the option, the limit and the fix.
Result<int> checked_port_count(const Options& opts, const SiteConfig& site);

// Every port of SLURM_STEP_RESV_PORTS ("12000-12003", "12000,12005-12006"),
// in order; empty when Slurm reserved none.
Result<std::vector<int>> reserved_ports(std::string_view resv);

// The step's ports from Slurm's reservation: the first is the coordinator,
// the next `dp_port_count` DP_PORTS. Too few: the refusal says how to ask for more.
Result<StepPorts> ports_from_reservation(const std::vector<int>& reserved, int dp_port_count,
                                         std::string_view resv_text);

// Who carries the step's ports between the nodes (the node agents do it,
// through the daemon's write-once key).
enum class PortsRole : uint8_t {
  none,     // the node knows them (Slurm's reservation, --dp-master-port alone) or
            // another node fails the step
  publish,  // the master node: takes and holds them, publishes them or why it has none
  fetch,    // another node: waits for the master node's
};

// The step's ports as any node knows them without the master node.
struct KnownPorts {
  std::optional<int> fixed;           // --dp-master-port
  std::optional<StepPorts> reserved;  // Slurm's reservation (without --dp-master-port)
};

// From --dp-master-port, the site's resv_ports= and the reservation Slurm
// made for the step (slurm_reservation.hpp: slurmctld's record, never the
// job's SLURM_STEP_RESV_PORTS as such; nullopt or "": none), for a step of
// `dp_port_count` more ports (the plan's checked count). A reservation too
// small for the step is a refusal.
Result<KnownPorts> known_ports(const Options& opts, const SiteConfig& site,
                               const std::optional<std::string>& resv, int dp_port_count);

// This node's part. The master node always publishes (the step report shows
// the ports, and a failure becomes the step's first); another node fetches
// unless it knows them (the plugin reads Slurm's reservation on the master
// node alone, so another node knows only a --dp-master-port without
// --dp-ports). A refusal of known_ports: the master node publishes it.
struct NodePorts {
  PortsRole role = PortsRole::none;
  bool take = false;               // the master node takes and holds them (the plugin)
  std::optional<StepPorts> known;  // another node's, known without the master node
};
NodePorts node_ports(const Result<KnownPorts>& known, bool master, int node_count,
                     int dp_port_count);

// "29401,29402": DP_PORTS' spelling; and back, strictly (every port 1..65535,
// at most kMaxStepPorts).
std::string ports_text(const std::vector<int>& ports);
Result<std::vector<int>> parse_ports_text(std::string_view text, std::string_view what);

// What every task of the step is told about the ports beyond MASTER_PORT:
// JAX_COORDINATOR_ADDRESS=<master_addr>:<coordinator> and, with --dp-ports,
// DP_PORTS. Texts, so --dp-explain can say "auto(...)" before they exist.
std::vector<std::pair<std::string, std::string>> ports_environment(const std::string& master_addr,
                                                                   const std::string& coordinator,
                                                                   const std::string& ports);

}  // namespace dp
