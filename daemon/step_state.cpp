#include "step_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "step_ports_value.hpp"

namespace dp::daemon {

void StepState::log(const std::string& line) const {
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg.job_id.c_str(),
               cfg.step_id.c_str(), line.c_str());
}

StepState::StepState(BrokerConfig config, Outbox& outbox, Clock::time_point now)
    : cfg(std::move(config)),
      out(outbox),
      phases(now, "job " + cfg.job_id + " step " + cfg.step_id),
      report(now, cfg.job_id, cfg.step_id, cfg.world_size, cfg.limits.hang_timeout,
             cfg.limits.hang_timeout_by_user),
      live(cfg.world_size, cfg.limits.silence_limit(), now),
      store(cfg.limits),
      calls(cfg.world_size, cfg.limits.max_pending_calls, cfg.limits.max_open_barriers) {
  if (!cfg.make_nonce) cfg.make_nonce = rdv::random_nonce;
  // Rendezvous code commonly sets a key or two per rank: sized once, the
  // table does not rehash while a large world arrives.
  store.reserve(static_cast<size_t>(std::max(cfg.world_size, 1)));
  const bool agents = cfg.limits.nodes > 0;
  hello_budget.set_caps(HelloBudget::caps_for(
      cfg.limits.max_unauthenticated, agents,
      agents ? cfg.limits.nodes : static_cast<int>(cfg.step_nodes.size()), cfg.world_size));
  hello_budget.set_step_nodes(cfg.step_nodes);
  if (cfg.limits.restarts()) {
    restarts.emplace();
    restarts->machine = RestartMachine(cfg.limits.restart_stop);
    restarts->times = RestartTimes(cfg.world_size);
    // Per-node launchers all run (torchrun keeps the spares waiting): no
    // roster spares, and each lost node one of torchrun's restarts.
    const bool programs = cfg.limits.restart_programs != 0;
    restarts->roster = initial_roster(cfg.limits.nodes, programs ? cfg.limits.spares : 0,
                                      cfg.limits.tasks_per_node,
                                      programs ? cfg.limits.max_restarts : cfg.limits.spares);
    if (cfg.limits.spares > 0) report.note_restarts({}, cfg.limits.spares);
  }
  if (cfg.limits.straggler_pct > 0) {
    straggler::Settings s;
    s.threshold = cfg.limits.straggler_pct / 100.0;
    report.watch_stragglers(s, ::sysconf(_SC_CLK_TCK));
  }
}

void StepState::reply_ok(ConnId conn, uint64_t id) {
  proto::Response r;
  r.set_id(id);
  out.send(conn, r);
}

void StepState::answer(ConnId conn, const proto::Response& r) {
  if (r.code() == proto::PROTOCOL) ++count.protocol_errors;
  if (r.code() == proto::LIMIT) ++count.limit_errors;
  out.send(conn, r);
}

void StepState::reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  proto::Response r;
  r.set_id(id);
  r.set_code(code);
  r.set_message(std::move(message));
  if (code == proto::ABORTED) add_master_failure(r);
  answer(conn, r);
}

void StepState::reply_error(ConnId conn, uint64_t id, const Error& e) {
  reply_error(conn, id, rdv::to_wire(e.code), e.message);
}

void StepState::add_master_failure(proto::Response& r) const {
  if (abort && abort->master_failure)
    rdv::to_proto(*abort->master_failure, *r.mutable_master_failure());
}

AbortCause cause_of(const Peer& p, AbortCause::How how, std::string message) {
  AbortCause c;
  c.how = how;
  c.rank = p.rank;
  c.host = p.host;
  c.message = std::move(message);
  return c;
}

}  // namespace dp::daemon
