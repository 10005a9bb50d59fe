#include "dp/slurm_reservation.hpp"

#include <algorithm>
#include <vector>

#include "dp/shown_value.hpp"
#include "dp/step_ports.hpp"

namespace dp {
namespace {

constexpr const char* kVariable = "SLURM_STEP_RESV_PORTS";

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

// Where slurmctld could not answer: the job's list is the user's word, and
// even inside MpiParams=ports= it may name ports Slurm reserved for another
// step, so none of it is taken; the step leases, and the list is named.
Reservation from_job_env(const ReservationSources& s) {
  Reservation r;
  if (!s.job_env) return r;
  auto named = reserved_ports(*s.job_env);
  if (!named) {
    r.refusal = refused(*s.job_env, "not a port list", kLeased);
    return r;
  }
  if (auto p = first_privileged(*named, s.unprivileged_start)) {
    r.refusal = refused(*s.job_env, privileged_text(*p, s.unprivileged_start), kLeased);
    return r;
  }
  r.refusal = refused(*s.job_env,
                      "slurmctld could not be asked for the step's reservation (" +
                          shown_value(s.slurmctld_error, 200) +
                          "), and a list from the job's environment may name another step's ports",
                      kLeased);
  return r;
}

}  // namespace

Reservation slurm_reservation(const ReservationSources& sources) {
  if (sources.slurmctld) return from_slurmctld(sources, *sources.slurmctld);
  return from_job_env(sources);
}

}  // namespace dp
