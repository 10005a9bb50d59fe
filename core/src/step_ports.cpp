#include "dp/step_ports.hpp"

#include "dp/env_names.hpp"
#include "dp/list_text.hpp"
#include "dp/params.hpp"
#include "dp/shown_value.hpp"

namespace dp {

Result<int> checked_port_count(const Options& opts, const SiteConfig& site) {
  const int n = opts.dp_port_count.value_or(0);
  const std::string named = "--dp-ports=" + std::to_string(n);
  if (n > site.max_ports)
    return make_error(Errc::invalid_argument,
                      named + ": this site allows a step at most " +
                          std::to_string(site.max_ports) +
                          " ports besides MASTER_PORT (max_ports= in plugstack.conf); ask for " +
                          (site.max_ports > 0 ? "at most " + std::to_string(site.max_ports)
                                              : std::string("none")) +
                          ", or ask the admin to raise max_ports");
  const long long range = static_cast<long long>(site.port_max) - site.port_min + 1;
  const int needed = n + (opts.master_port.value_or(0) > 0 ? 0 : 1);
  if (n > 0 && needed > range && !site.port_fallback_os)
    return make_error(Errc::invalid_argument,
                      named + ": the site's port range " + std::to_string(site.port_min) + "-" +
                          std::to_string(site.port_max) + " holds " + std::to_string(range) +
                          " ports and the step needs " + std::to_string(needed) +
                          " on rank 0's node; ask for at most " +
                          std::to_string(range - (needed - n)) +
                          ", or ask the admin to widen ports=");
  return n;
}

PortHold port_hold(StepPort port, const Options& opts, bool step_store) {
  if (opts.master_socket) {
    switch (*opts.master_socket) {
      case MasterSocket::close: return PortHold::to_exec;
      case MasterSocket::pass: return PortHold::passed;
      case MasterSocket::share: return PortHold::to_listen;
    }
  }
  return port == StepPort::coordinator && step_store ? PortHold::to_listen : PortHold::to_exec;
}

const char* port_hold_text(PortHold hold) noexcept {
  switch (hold) {
    case PortHold::to_exec: return "held to rank 0's start";
    case PortHold::to_listen: return "held as your uid until the program listens (SO_REUSEPORT)";
    case PortHold::passed: return "handed to rank 0 listening";
  }
  return "";
}

Result<std::vector<int>> reserved_ports(std::string_view resv) {
  std::vector<int> out;
  auto bad = [&] {
    return make_error(Errc::invalid_argument, "SLURM_STEP_RESV_PORTS=" + shown_value(resv) +
                                                  ": not a port list; check MpiParams=ports= "
                                                  "in slurm.conf");
  };
  for (std::string_view item : list_items(resv)) {
    const size_t dash = item.find('-');
    auto lo = parse_whole_number(item.substr(0, dash), 1, 65535);
    auto hi =
        dash == std::string_view::npos ? lo : parse_whole_number(item.substr(dash + 1), 1, 65535);
    if (!lo || !hi || *hi < *lo || out.size() + static_cast<size_t>(*hi - *lo) > 65535)
      return bad();
    for (long long p = *lo; p <= *hi; ++p) out.push_back(static_cast<int>(p));
  }
  return out;
}

Result<StepPorts> ports_from_reservation(const std::vector<int>& reserved, int dp_port_count,
                                         std::string_view resv_text) {
  if (reserved.size() < static_cast<size_t>(dp_port_count) + 1)
    return make_error(Errc::unavailable,
                      "--dp-ports=" + std::to_string(dp_port_count) + ": Slurm reserved " +
                          std::to_string(reserved.size()) + " port(s) for this step (" +
                          "SLURM_STEP_RESV_PORTS=" + shown_value(resv_text, 64) +
                          ") and the step needs " + std::to_string(dp_port_count + 1) +
                          " (MASTER_PORT and " + std::to_string(dp_port_count) +
                          " more): srun --resv-ports=" + std::to_string(dp_port_count + 1) +
                          " asks Slurm for them");
  StepPorts p;
  p.coordinator = reserved.front();
  p.dp_ports.assign(reserved.begin() + 1, reserved.begin() + 1 + dp_port_count);
  return p;
}

Result<KnownPorts> known_ports(const Options& opts, const SiteConfig& site,
                               const std::optional<std::string>& resv, int dp_port_count) {
  KnownPorts k;
  if (opts.master_port.value_or(0) > 0) {
    k.fixed = *opts.master_port;
    return k;
  }
  if (!site.use_resv_ports || !resv) return k;
  auto reserved = reserved_ports(*resv);
  DP_TRY(reserved);
  if (reserved->empty()) return k;
  auto mine = ports_from_reservation(*reserved, dp_port_count, *resv);
  DP_TRY(mine);
  k.reserved = std::move(*mine);
  return k;
}

NodePorts node_ports(const Result<KnownPorts>& known, bool master, int node_count,
                     int dp_port_count) {
  NodePorts n;
  if (master) {
    n.role = PortsRole::publish;
    n.take = known.ok();
    return n;
  }
  if (!known) return n;  // the master node publishes the refusal
  // Slurm's reservation is the master node's to check (slurm_reservation.hpp):
  // another node fetches what it took.
  if (known->fixed && (dp_port_count == 0 || node_count < 2)) {
    n.known = StepPorts{*known->fixed, {}};
  } else {
    n.role = PortsRole::fetch;
  }
  return n;
}

std::string ports_text(const std::vector<int>& ports) {
  std::string out;
  for (int p : ports) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

Result<std::vector<int>> parse_ports_text(std::string_view text, std::string_view what) {
  std::vector<int> out;
  for (std::string_view item : list_items(text)) {
    auto p = parse_whole_number(item, 1, 65535);
    if (!p || out.size() >= static_cast<size_t>(kMaxStepPorts))
      return make_error(Errc::protocol, std::string(what) + ": '" + shown_value(text, 64) +
                                            "' is not a list of at most " +
                                            std::to_string(kMaxStepPorts) + " ports");
    out.push_back(static_cast<int>(*p));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ports_environment(const std::string& master_addr,
                                                                   const std::string& coordinator,
                                                                   const std::string& ports) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!master_addr.empty() && !coordinator.empty())
    env.emplace_back(env::kJaxCoordinatorAddress, master_addr + ":" + coordinator);
  if (!ports.empty()) env.emplace_back(env::kPorts, ports);
  return env;
}

}  // namespace dp
