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

}  // namespace

proto::Stats Broker::stats(bool with_report) const {
  proto::Stats s;
  s.set_connections(step_.peers.size());
  s.set_ranks_connected(static_cast<uint64_t>(step_.live.connected_count()));
  s.set_keys(step_.store.keys());
  s.set_bytes_stored(step_.store.bytes());
  s.set_requests(step_.count.requests);
  std::string t;
  auto line = [&t](const char* name, auto value) {
    t += std::string(name) + " " + std::to_string(value) + "\n";
  };
  t += "job " + step_.cfg.job_id + " step " + step_.cfg.step_id + "\n";
  line("world_size", step_.cfg.world_size);
  line("connections", step_.peers.size());
  line("connections_accepted", step_.count.accepted);
  line("connections_unauthenticated", step_.hello_budget.count());
  line("connections_evicted", step_.count.evicted);
  line("agents_connected", step_.count.agents);
  line("nodes_connected", step_.count.nodes);
  line("ranks_connected", step_.live.connected_count());
  line("ranks_seen", step_.live.seen_count());
  line("ranks_goodbye", step_.live.goodbye_count());
  line("keys", step_.store.keys());
  line("bytes_stored", step_.store.bytes());
  line("requests", step_.count.requests);
  line("heartbeats", step_.count.heartbeats);
  line("pending_calls", step_.calls.size());
  line("open_barriers", step_.calls.open_barriers());
  line("rejected_unauthorized", step_.count.rejected_auth);
  line("store_strangers_refused", node_agents_.strangers_refused());
  line("store_requests_refused", node_agents_.requests_refused());
  line("protocol_errors", step_.count.protocol_errors);
  line("limit_errors", step_.count.limit_errors);
  line("daemon_stop_gaps", step_.live.stop_gaps());
  line("suspensions", step_.live.suspensions());
  t += std::string("suspended ") + (step_.live.suspended() ? "yes" : "no") + "\n";
  t += std::string("aborted ") + (step_.abort ? "yes" : "no") + "\n";
  if (step_.abort) {
    t += std::string("abort_cause ") + how_name(step_.abort->how) + " rank " +
         std::to_string(step_.abort->rank) + " host " +
         (step_.abort->host.empty() ? "?" : step_.abort->host) + "\n";
  }
  t += "startup " + step_.phases.summary() + "\n";
  t += "ports " + step_.report.ports_text() + "\n";
  t += verdict_lines(step_.report);
  s.set_text(std::move(t));
  s.set_startup_line(startup_line());
  if (with_report) {
    s.set_report_json(report_json(Clock::now()));
    s.set_rank_table(step_.report.text(Clock::now()));
  }
  if (step_.report.failure()) s.set_first_failure(step_.report.failure()->message);
  s.set_ended_by_user(step_.report.ended_by_user());
  for (const auto& line : step_.report.unset_waits()) s.add_store_waits_unset(line);
  for (const auto& line : step_.report.store_refusals()) s.add_store_refusals(line);
  for (const auto& line : step_.report.restarts()) s.add_restarts(line);
  s.set_spares_left(step_.report.spares_left());
  return s;
}

std::string Broker::report_json(Clock::time_point now) const {
  DaemonCounters c;
  c.connections = step_.peers.size();
  c.connections_accepted = step_.count.accepted;
  c.nodes_connected = static_cast<uint64_t>(step_.count.nodes);
  c.requests = step_.count.requests;
  c.heartbeats = step_.count.heartbeats;
  c.keys = step_.store.keys();
  c.bytes_stored = step_.store.bytes();
  c.refused_unauthorized = step_.count.rejected_auth;
  c.store_strangers_refused = node_agents_.strangers_refused();
  c.store_requests_refused = node_agents_.requests_refused();
  c.protocol_errors = step_.count.protocol_errors;
  c.limit_errors = step_.count.limit_errors;
  return step_.report.json(step_.phases, c, now);
}

}  // namespace dp::daemon
