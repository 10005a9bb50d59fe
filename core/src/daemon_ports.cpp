#include "dp/daemon_ports.hpp"

namespace dp {

namespace {
constexpr const char* kSiteKey = "daemon_ports";
constexpr const char* kSlurmKey = "SrunPortRange";
}  // namespace

std::string ListenRange::text() const {
  if (any()) return "any port";
  return setting + "=" + std::to_string(low) + "-" + std::to_string(high);
}

ListenRange daemon_listen_range(const SiteConfig& site, int srun_low, int srun_high) {
  if (site.daemon_port_min > 0) return {site.daemon_port_min, site.daemon_port_max, kSiteKey};
  if (srun_low > 0 && srun_high >= srun_low) return {srun_low, srun_high, kSlurmKey};
  return {};
}

int nth_listen_port(const ListenRange& r, uint32_t start, int i) {
  if (r.any()) return 0;
  const auto n = static_cast<uint32_t>(r.size());
  return r.low + static_cast<int>((start % n + static_cast<uint32_t>(i) % n) % n);
}

std::string listen_range_full(const ListenRange& r, const std::string& address) {
  std::string fix = r.setting == kSlurmKey
                        ? "widen SrunPortRange in slurm.conf (srun's own listeners take their "
                          "ports from it too), or set daemon_ports=LOW-HIGH on slurm-dp's "
                          "plugstack.conf line to other ports the firewall opens"
                        : "widen daemon_ports on slurm-dp's plugstack.conf line (ports the "
                          "firewall opens to the compute nodes)";
  return "no free port in " + r.text() + " on " + address + " (all " + std::to_string(r.size()) +
         " in use) for the step's nodes to reach; " + fix;
}

}  // namespace dp
