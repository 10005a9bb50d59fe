#include "stepd_ports.hpp"

#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "dp/env_names.hpp"
#include "dp/port_holders.hpp"
#include "dp/slurm_reservation.hpp"
#include "master_socket.hpp"
#include "slurm_step.hpp"
#include "socket_tables.hpp"

namespace dp::spank {
namespace {

// A Slurm-reserved port on the master node, held like a leased one. Slurm
// reserved it for this step alone, but a process that binds ports in a loop
// may have it for a moment: it is tried for a second before it counts as
// taken. Where only connections in TIME_WAIT keep it (an earlier program's,
// whose socket had no SO_REUSEADDR: for a minute nobody can bind the port),
// the step goes on with it unheld, as before the hold, for a program that may
// not bind it.
Result<HeldPort> hold_reserved_port(int port) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  UniqueFd socket = hold_port(port);
  while (!socket && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded by the deadline
    socket = hold_port(port);
  }
  if (socket) return HeldPort{port, std::move(socket)};
  const PortHolders h = port_holders_here(port, port);
  if (h.by_uid.empty() && h.time_wait) {
    slurm_info(
        "slurm-dp: port %d, reserved by Slurm, has connections in TIME_WAIT that keep every "
        "binder out for now: not held",
        port);
    return HeldPort{port, UniqueFd()};
  }
  return make_error(Errc::unavailable,
                    "port " + std::to_string(port) +
                        ", which Slurm reserved for this step (SLURM_STEP_RESV_PORTS), is bound "
                        "by another process on the master node (" +
                        port_holder_text(port) +
                        "); Slurm gives each port of MpiParams=ports= to one step at a time, so "
                        "an admin can end that process; or pass --dp-master-port=PORT");
}

// The reservation this step may take (dp/slurm_reservation.hpp): asked of
// slurmctld only where the job's environment names one (srun sets it
// whenever Slurm reserved ports; without it the step leases, as on a site
// without MpiParams=ports=), so the other steps cost no look-up. slurmctld
// is Slurm's, not the user's: its answer is bounded by Slurm's MessageTimeout.
Reservation trusted_reservation(const StepdFacts& f) {
  ReservationSources s;
  s.job_env = f.env.resv_ports;
  if (!s.job_env) return {};
  s.unprivileged_start = unprivileged_port_start();
  auto record = load_step_resv_ports(f.id.job, f.id.step);
  if (record) {
    s.slurmctld = *record;
  } else {
    s.slurmctld_error = record.error().message;
  }
  return slurm_reservation(s);
}

// The held ports that stay held past rank 0's exec until the program listens
// (PortHold::to_listen) become the job's user's to share; held.shared_ports
// lists them for the node agent, which keeps a copy of each.
void share_held_ports(const PortsRequest& req, const std::vector<HeldPort>& list,
                      bool coordinator_held, StepdPorts& held) {
  const bool step_store = req.store == StoreKind::step;
  held.shared_ports.clear();
  for (const HeldPort& h : list) {
    const bool coordinator = coordinator_held && h.port == held.ports.coordinator;
    if (!h.socket || port_hold(coordinator ? StepPort::coordinator : StepPort::dp_port, req.options,
                               step_store) != PortHold::to_listen)
      continue;
    if (auto ok = share_hold_with_user(h.socket.get(), req.facts.user.uid); !ok) {
      slurm_info("slurm-dp: port %d: %s; held to rank 0's start only", h.port,
                 ok.error().message.c_str());
      continue;
    }
    held.shared_ports.push_back(h.port);
  }
}

// The master node takes the step's ports and holds them from now until rank
// 0's exec (or, shared with the job's user, until its program listens):
// Slurm's reservation, or --dp-master-port (not held: the user's choice) and
// leases of the site's range.
Result<StepPorts> take_ports(const PortsRequest& req, const KnownPorts& known, StepdPorts& held) {
  std::vector<HeldPort> list;
  StepPorts& ports = held.ports;
  if (known.reserved) {
    ports = *known.reserved;
    std::vector<int> all{ports.coordinator};
    all.insert(all.end(), ports.dp_ports.begin(), ports.dp_ports.end());
    for (int port : all) {
      auto h = hold_reserved_port(port);
      DP_TRY(h);
      list.push_back(std::move(*h));
    }
  } else {
    LeaseRequest lease = lease_request(req.site, req.facts.user.uid, req.facts.id.text());
    lease.dp_port_count = req.dp_port_count;
    lease.master_fixed = known.fixed.has_value();
    auto leases = lease_ports(req.site, lease);
    DP_TRY(leases);
    for (PortLease& l : *leases) list.push_back({l.port(), l.take_hold()});
    held.leases = std::move(*leases);
    size_t next = 0;
    ports = StepPorts{known.fixed ? *known.fixed : list[next++].port, {}};
    for (; next < list.size(); ++next) ports.dp_ports.push_back(list[next].port);
  }
  share_held_ports(req, list, !known.fixed, held);
  auto kept = held.hold.keep(std::move(list));
  DP_TRY(kept);
  return ports;
}

}  // namespace

void StepdPorts::release() noexcept {
  hold.stop();
  leases.clear();  // releases each
}

Result<StepPorts> plan_node_ports(const PortsRequest& req, StepdPorts& held,
                                  agent::AgentSettings& s) {
  const StepdFacts& f = req.facts;
  std::optional<std::string> resv;  // the master node's alone: another node fetches
  if (f.master && req.site.use_resv_ports && !req.options.master_port.value_or(0)) {
    Reservation r = trusted_reservation(f);
    held.refusal = std::move(r.refusal);
    if (!held.refusal.empty())
      slurm_info("slurm-dp: step %s: %s", f.id.text().c_str(), held.refusal.c_str());
    if (!r.ports.empty()) resv = std::move(r.ports);
  }
  const auto known = known_ports(req.options, req.site, resv, req.dp_port_count);
  const NodePorts part = node_ports(known, f.master, static_cast<int>(f.nodes), req.dp_port_count);
  s.master = part.role;
  Result<StepPorts> mine = StepPorts{};
  if (!known) mine = Result<StepPorts>(known.error());
  else if (part.take) mine = take_ports(req, *known, held);
  else if (part.known) mine = *part.known;
  if (part.role == PortsRole::publish) {
    if (mine) {
      s.published = mine->coordinator;
      s.published.dp_ports = mine->dp_ports;
    } else {
      s.published = MasterFailure{f.node, mine.error().message};
    }
  }
  return mine;
}

Result<void> ports_before_exec(spank_t sp, StepdPorts& held, const Options& options) {
  // A task that has not reached its task_init yet (load, another plugin's
  // task_init before ours) still holds a copy; past the bound the program
  // starts anyway, as it would without the hold.
  if (!held.hold.await_other_copies(kOtherCopiesWaitMs))
    slurm_info(
        "slurm-dp: another task of the node still held the step's ports after %d ms; "
        "rank 0 starts, and its program may find MASTER_PORT in use",
        kOtherCopiesWaitMs);
  std::vector<int> all{held.ports.coordinator};
  all.insert(all.end(), held.ports.dp_ports.begin(), held.ports.dp_ports.end());
  if (!options.passes_master_socket()) {
    for (int port : all) DP_TRY(check_step_port_before_exec(held.hold.fd(port), port));
    return {};
  }
  std::vector<UniqueFd> fds;
  for (int port : all) {
    auto fd = master_listen_socket(held.hold.fd(port), port);
    DP_TRY(fd);
    fds.push_back(std::move(*fd));
  }
  std::vector<int> ports_fds;
  for (size_t i = 1; i < fds.size(); ++i) ports_fds.push_back(fds[i].get());
  spank_err_t rc{};  // ESPANK_SUCCESS until a call fails
  if ((rc = spank_setenv(sp, env::kMasterListenFd, std::to_string(fds[0].get()).c_str(), 1)) !=
          ESPANK_SUCCESS ||
      (!ports_fds.empty() &&
       (rc = spank_setenv(sp, env::kPortsListenFds, ports_text(ports_fds).c_str(), 1)) !=
           ESPANK_SUCCESS))
    return make_error(Errc::internal, std::string("cannot set ") + env::kMasterListenFd + " or " +
                                          env::kPortsListenFds + ": " + spank_text(rc));
  for (UniqueFd& fd : fds) fd.release();  // the program's from here (not close-on-exec)
  return {};
}

}  // namespace dp::spank
