// slurmstepd's part of the step's ports (dp/step_ports.hpp says how many and
// which node takes them): on rank 0's node, root takes them (--dp-master-port,
// the ports Slurm reserved for this step, or leases of the site's range),
// holds the reserved and leased ones until rank 0's exec (step_port_hold.hpp)
// or shares them with the job's user, and publishes them through the node
// agent; another node knows them or has its agent fetch them. Rank 0's task,
// before exec, checks its copy of the hold or is handed the ports listening.
#pragma once

#include <string>
#include <vector>

#include "dp/options.hpp"
#include "dp/site_config.hpp"
#include "dp/step_ports.hpp"
#include "dp/step_store.hpp"
#include "launch_contract.hpp"
#include "port_lease.hpp"
#include "slurm_headers.hpp"
#include "step_port_hold.hpp"
#include "stepd_facts.hpp"

namespace dp::spank {

// What the master node holds for its step's ports between Slurm's callbacks.
struct StepdPorts {
  StepPorts ports;                // the step's, once known (coordinator, DP_PORTS)
  std::vector<PortLease> leases;  // the leases taken, released at the step's end
  StepPortHold hold;              // the reserved and leased ports, bound until rank 0's exec
  std::vector<int> shared_ports;  // of those, the ones the agent holds on (PortHold::to_listen)
  // A port list root refused (the job's SLURM_STEP_RESV_PORTS, or a privileged
  // reservation): rank 0's task names it on srun's stderr. "": none.
  std::string refusal;

  // The step's end: lets go of the hold and releases the leases.
  void release() noexcept;
};

// What deciding the node's ports takes.
struct PortsRequest {
  const StepdFacts& facts;
  const SiteConfig& site;
  const Options& options;
  int dp_port_count = 0;  // the plan's checked count (LayoutPlan::dp_port_count)
  StoreKind store = StoreKind::rank0;
};

// This node's ports as the core decides its part (dp::node_ports): the master
// node takes and holds them into `held` and publishes them, or why it has
// none, in the agent's settings `s` (a failure becomes the step's first);
// another node knows them or has its agent fetch them (s.master). Returns the
// ports this node knows now (none where it fetches) or the failure.
Result<StepPorts> plan_node_ports(const PortsRequest& req, StepdPorts& held,
                                  agent::AgentSettings& s);

// Rank 0, just before exec, with the copies of the hold it inherited (on the
// master node): with --dp-master-socket=pass each port is handed to the
// program listening (DP_MASTER_LISTEN_FD, DP_PORTS_LISTEN_FDS), so none is
// ever free; otherwise each hold is checked to still keep its port. First it
// waits, up to kOtherCopiesWaitMs, for the node's other tasks to drop their
// copies, which would keep the program from binding the port.
inline constexpr int kOtherCopiesWaitMs = 5'000;
Result<void> ports_before_exec(spank_t sp, StepdPorts& held, const Options& options);

}  // namespace dp::spank
