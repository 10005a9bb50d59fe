// The stats request: counters a user can read, memcached-style.
#include "broker.hpp"

namespace dp::daemon {

namespace {

// What the watches said: hangs, stragglers, and the stacks at the first failure.
std::string verdict_lines(const StepReport& report) {
  std::string t;
  for (const auto& l : report.hang_lines()) t += l + "\n";
  if (const auto* st = report.stragglers())
    for (const auto& l : st->lines(report.counts_collectives())) t += l + "\n";
  if (report.failure() && !report.failure()->stacks.empty()) {
    t += "at the first failure:\n";
    for (const auto& l : report.failure()->stacks) t += "  " + l + "\n";
  }
  return t;
}

// By host, summed.
uint64_t all_hosts(const std::map<std::string, uint64_t>& by_host) {
  uint64_t n = 0;
  for (const auto& [host, count] : by_host) n += count;
  return n;
}

}  // namespace

proto::Stats Broker::stats(bool with_report) const {
  proto::Stats s;
  s.set_connections(peers_.size());
  s.set_ranks_connected(static_cast<uint64_t>(live_.connected_count()));
  s.set_keys(store_.keys());
  s.set_bytes_stored(store_.bytes());
  s.set_requests(requests_);
  std::string t;
  auto line = [&t](const char* name, auto value) {
    t += std::string(name) + " " + std::to_string(value) + "\n";
  };
  t += "job " + cfg_.job_id + " step " + cfg_.step_id + "\n";
  line("world_size", cfg_.world_size);
  line("connections", peers_.size());
  line("connections_accepted", accepted_);
  line("connections_unauthenticated", hello_budget_.count());
  line("connections_evicted", evicted_);
  line("agents_connected", agents_);
  line("nodes_connected", nodes_);
  line("ranks_connected", live_.connected_count());
  line("ranks_seen", live_.seen_count());
  line("ranks_goodbye", live_.goodbye_count());
  line("keys", store_.keys());
  line("bytes_stored", store_.bytes());
  line("requests", requests_);
  line("heartbeats", heartbeats_);
  line("pending_calls", calls_.size());
  line("open_barriers", calls_.open_barriers());
  line("rejected_unauthorized", rejected_auth_);
  line("store_strangers_refused", all_hosts(store_strangers_));
  line("store_requests_refused", all_hosts(store_refused_));
  line("protocol_errors", protocol_errors_);
  line("limit_errors", limit_errors_);
  line("daemon_stop_gaps", live_.stop_gaps());
  line("suspensions", live_.suspensions());
  t += std::string("suspended ") + (live_.suspended() ? "yes" : "no") + "\n";
  t += std::string("aborted ") + (abort_ ? "yes" : "no") + "\n";
  if (abort_) {
    t += std::string("abort_cause ") + how_name(abort_->how) + " rank " +
         std::to_string(abort_->rank) + " host " + (abort_->host.empty() ? "?" : abort_->host) +
         "\n";
  }
  t += "startup " + phases_.summary() + "\n";
  t += "ports " + report_.ports_text() + "\n";
  t += verdict_lines(report_);
  s.set_text(std::move(t));
  s.set_startup_line(startup_line());
  if (with_report) {
    s.set_report_json(report_json(Clock::now()));
    s.set_rank_table(report_.text(Clock::now()));
  }
  if (report_.failure()) s.set_first_failure(report_.failure()->message);
  s.set_ended_by_user(report_.ended_by_user());
  for (const auto& line : report_.unset_waits()) s.add_store_waits_unset(line);
  for (const auto& line : report_.store_refusals()) s.add_store_refusals(line);
  for (const auto& line : report_.restarts()) s.add_restarts(line);
  s.set_spares_left(report_.spares_left());
  return s;
}

std::string Broker::report_json(Clock::time_point now) const {
  DaemonCounters c;
  c.connections = peers_.size();
  c.connections_accepted = accepted_;
  c.nodes_connected = static_cast<uint64_t>(nodes_);
  c.requests = requests_;
  c.heartbeats = heartbeats_;
  c.keys = store_.keys();
  c.bytes_stored = store_.bytes();
  c.refused_unauthorized = rejected_auth_;
  c.store_strangers_refused = all_hosts(store_strangers_);
  c.store_requests_refused = all_hosts(store_refused_);
  c.protocol_errors = protocol_errors_;
  c.limit_errors = limit_errors_;
  return report_.json(phases_, c, now);
}

}  // namespace dp::daemon
