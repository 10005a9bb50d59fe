#include "dp/slurm_reservation.hpp"

#include <algorithm>
#include <vector>

#include "dp/params.hpp"
#include "dp/shown_value.hpp"
#include "dp/step_ports.hpp"

namespace dp {
namespace {

constexpr const char* kVariable = "SLURM_STEP_RESV_PORTS";

std::string range_text(const std::pair<int, int>& r) {
  return std::to_string(r.first) + "-" + std::to_string(r.second);
}

std::string privileged_text(int port, int start) {
  return "port " + std::to_string(port) + " is below net.ipv4.ip_unprivileged_port_start (" +
         std::to_string(start) + "): slurm-dp never binds a privileged port for a user's step";
}

// The first port of the list only root may bind: the most serious reason
// to refuse a list is named first.
std::optional<int> first_privileged(const std::vector<int>& ports, int start) {
  for (int p : ports)
    if (privileged_port(p, start)) return p;
  return std::nullopt;
}

// "SLURM_STEP_RESV_PORTS=879: <why>; <then>".
std::string refused(std::string_view value, const std::string& why, const std::string& then) {
  return std::string(kVariable) + "=" + shown_value(value) + ": " + why + "; " + then;
}

const std::string kLeased = "the step's ports are leased from the site's ports= range instead";

// Where slurmctld answered: its record is the step's reservation; a job
// variable that names another port is named, and the record's ports are
// still the step's unless one of them is privileged.
Reservation from_slurmctld(const ReservationSources& s, const std::string& record) {
  Reservation r;
  auto ports = reserved_ports(record);
  if (auto p = ports ? first_privileged(*ports, s.unprivileged_start) : std::nullopt) {
    r.refusal = std::string("Slurm's reservation for this step (") + shown_value(record) +
                "): " + privileged_text(*p, s.unprivileged_start) +
                "; check MpiParams=ports= in slurm.conf; " + kLeased;
    return r;
  }
  r.ports = record;
  if (!s.job_env || *s.job_env == record) return r;
  const std::string then = record.empty() ? kLeased : "the step uses Slurm's (" + record + ")";
  auto named = reserved_ports(*s.job_env);
  if (!named) {
    r.refusal = refused(*s.job_env, "not a port list", then);
    return r;
  }
  if (auto p = first_privileged(*named, s.unprivileged_start)) {
    r.refusal = refused(*s.job_env, privileged_text(*p, s.unprivileged_start), then);
    return r;
  }
  std::vector<int> mine = ports ? *ports : std::vector<int>{};
  for (int p : *named) {
    if (std::find(mine.begin(), mine.end(), p) == mine.end()) {
      r.refusal = refused(*s.job_env,
                          "port " + std::to_string(p) +
                              " is not one Slurm reserved for this step (slurmctld's record of "
                              "the step: " +
                              (record.empty() ? std::string("none") : shown_value(record)) +
                              "); the variable came from the job's environment",
                          then);
      return r;
    }
  }
  return r;  // the same ports, written otherwise
}

// Where slurmctld could not answer: the job's list, only inside MpiParams=ports=.
Reservation from_job_env(const ReservationSources& s) {
  Reservation r;
  if (!s.job_env) return r;
  auto named = reserved_ports(*s.job_env);
  if (!named) {
    r.refusal = refused(*s.job_env, "not a port list", kLeased);
    return r;
  }
  const std::string asked = "slurmctld could not be asked for the step's reservation (" +
                            shown_value(s.slurmctld_error, 200) + ")";
  if (auto p = first_privileged(*named, s.unprivileged_start)) {
    r.refusal = refused(*s.job_env, privileged_text(*p, s.unprivileged_start), kLeased);
    return r;
  }
  for (int p : *named) {
    if (!s.mpi_ports) {
      r.refusal = refused(*s.job_env,
                          asked + " and this node's slurm.conf sets no MpiParams=ports=, so port " +
                              std::to_string(p) + " cannot be Slurm's",
                          kLeased);
      return r;
    }
    if (p < s.mpi_ports->first || p > s.mpi_ports->second) {
      r.refusal = refused(*s.job_env,
                          asked + " and port " + std::to_string(p) +
                              " is outside MpiParams=ports=" + range_text(*s.mpi_ports) +
                              ", so it cannot be Slurm's",
                          kLeased);
      return r;
    }
  }
  r.ports = *s.job_env;
  return r;
}

}  // namespace

std::optional<std::pair<int, int>> mpi_ports_range(std::string_view mpi_params) {
  constexpr std::string_view key = "ports=";
  size_t pos = 0;
  while (pos <= mpi_params.size()) {
    const size_t end = std::min(mpi_params.find(',', pos), mpi_params.size());
    const std::string_view word = mpi_params.substr(pos, end - pos);
    pos = end + 1;
    if (word.substr(0, key.size()) != key) continue;
    const std::string_view range = word.substr(key.size());
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos) return std::nullopt;
    auto lo = parse_whole_number(range.substr(0, dash), 1, 65535);
    auto hi = parse_whole_number(range.substr(dash + 1), 1, 65535);
    if (!lo || !hi || *hi < *lo) return std::nullopt;
    return std::pair{static_cast<int>(*lo), static_cast<int>(*hi)};
  }
  return std::nullopt;
}

Reservation slurm_reservation(const ReservationSources& sources) {
  if (sources.slurmctld) return from_slurmctld(sources, *sources.slurmctld);
  return from_job_env(sources);
}

}  // namespace dp
