#include "broker.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "step_ports_value.hpp"
#include "store_ops.hpp"
#include "torch_store_ops.hpp"

namespace dp::daemon {

Broker::Broker(BrokerConfig cfg, Outbox& out, Clock::time_point now)
    : cfg_(std::move(cfg)),
      out_(out),
      phases_(now, "job " + cfg_.job_id + " step " + cfg_.step_id),
      report_(now, cfg_.job_id, cfg_.step_id, cfg_.world_size, cfg_.limits.hang_timeout,
              cfg_.limits.hang_timeout_by_user),
      live_(cfg_.world_size, cfg_.limits.silence_limit(), now),
      store_(cfg_.limits),
      calls_(cfg_.world_size, cfg_.limits.max_pending_calls, cfg_.limits.max_open_barriers),
      watch_(cfg_.limits.hang_timeout, cfg_.limits.hang_timeout_by_user, ::sysconf(_SC_CLK_TCK),
             now) {
  if (!cfg_.make_nonce) cfg_.make_nonce = rdv::random_nonce;
  // Rendezvous code commonly sets a key or two per rank: sized once, the
  // table does not rehash while a large world arrives.
  store_.reserve(static_cast<size_t>(std::max(cfg_.world_size, 1)));
  const bool agents = cfg_.limits.nodes > 0;
  hello_budget_.set_caps(HelloBudget::caps_for(
      cfg_.limits.max_unauthenticated, agents,
      agents ? cfg_.limits.nodes : static_cast<int>(cfg_.step_nodes.size()), cfg_.world_size));
  hello_budget_.set_step_nodes(cfg_.step_nodes);
  if (cfg_.limits.restarts()) {
    restarts_.emplace();
    restarts_->machine = RestartMachine(cfg_.limits.restart_stop);
    restarts_->times = RestartTimes(cfg_.world_size);
    // Per-node launchers all run (torchrun keeps the spares waiting): no
    // roster spares, and each lost node one of torchrun's restarts.
    const bool programs = cfg_.limits.restart_programs != 0;
    restarts_->roster = initial_roster(cfg_.limits.nodes, programs ? cfg_.limits.spares : 0,
                                       cfg_.limits.tasks_per_node,
                                       programs ? cfg_.limits.max_restarts : cfg_.limits.spares);
    if (cfg_.limits.spares > 0) report_.note_restarts({}, cfg_.limits.spares);
  }
  if (cfg_.limits.straggler_pct > 0) {
    straggler::Settings s;
    s.threshold = cfg_.limits.straggler_pct / 100.0;
    report_.watch_stragglers(s, ::sysconf(_SC_CLK_TCK));
  }
}

uint32_t Broker::max_frame_bytes(ConnId conn) const {
  auto it = peers_.find(conn);
  if (it == peers_.end() || it->second.state == PeerState::awaiting_hello)
    return rdv::kHelloFrameLimit;
  const BrokerLimits& l = cfg_.limits;
  return std::max(l.max_request_bytes, l.max_key_bytes + l.max_value_bytes) +
         rdv::kRequestEnvelopeBytes;
}

bool Broker::finished() const {
  return cfg_.world_size > 0 && live_.goodbye_count() == cfg_.world_size && peers_.empty();
}

void Broker::reply_ok(ConnId conn, uint64_t id) {
  proto::Response r;
  r.set_id(id);
  out_.send(conn, r);
}

void Broker::answer(ConnId conn, const proto::Response& r) {
  if (r.code() == proto::PROTOCOL) ++protocol_errors_;
  if (r.code() == proto::LIMIT) ++limit_errors_;
  out_.send(conn, r);
}

void Broker::reply_error(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  proto::Response r;
  r.set_id(id);
  r.set_code(code);
  r.set_message(std::move(message));
  if (code == proto::ABORTED) add_master_failure(r);
  answer(conn, r);
}

void Broker::add_master_failure(proto::Response& r) const {
  if (abort_ && abort_->master_failure)
    rdv::to_proto(*abort_->master_failure, *r.mutable_master_failure());
}

void Broker::reply_error(ConnId conn, uint64_t id, const Error& e) {
  reply_error(conn, id, rdv::to_wire(e.code), e.message);
}

void Broker::reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  std::optional<AbortCause> lost;
  if (auto it = peers_.find(conn);
      it != peers_.end() && peers_.holds_ranks(conn, it->second) && code != proto::TIMEOUT) {
    const std::string why = "was disconnected by the rendezvous daemon (" + message + ")";
    lost = it->second.role == proto::ROLE_NODE
               ? peers_.node_loss(conn, it->second, AbortCause::How::refused, why)
               : cause_of(it->second, AbortCause::How::refused,
                          peers_.describe_peer(it->second) + " " + why);
  }
  std::optional<Peer> gone;
  if (auto it = peers_.find(conn); it != peers_.end()) gone = it->second;
  reply_error(conn, id, code, std::move(message));
  forget_peer(conn);
  out_.close(conn);
  if (lost) abort_job(std::move(*lost));
  if (gone) restart_node_left(*gone, Clock::now());  // no answer will come from it
}

bool Broker::on_oversized_frame(ConnId conn, uint32_t announced, uint32_t limit,
                                std::string_view head) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return false;
  const std::string what = "frame of " + std::to_string(announced) +
                           " bytes exceeds the limit of " + std::to_string(limit) + " bytes";
  if (it->second.state == PeerState::awaiting_hello) {
    reject_and_close(conn, 0, proto::LIMIT, what + " before hello; closing the connection");
    return false;
  }
  ++requests_;
  reply_error(conn, rdv::leading_request_id(head), proto::LIMIT,
              "request refused: " + what +
                  " (a request's keys and values: dp-rendezvousd --max-request-bytes, "
                  "--max-value-bytes); the connection stays");
  return true;
}

void Broker::on_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return (void)fenced_frame(conn, payload, now);
  Peer& p = it->second;
  if (p.rank >= 0) live_.heard(p.rank, now);
  ++requests_;
  proto::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    reject_and_close(conn, 0, proto::PROTOCOL,
                     "malformed frame: not a rendezvous request; closing the connection (is this a "
                     "dp client of the same release?)");
    return;
  }
  if (p.state == PeerState::awaiting_hello) {
    if (req.op_case() != proto::Request::kHello) {
      ++rejected_auth_;
      reject_and_close(
          conn, req.id(), proto::UNAUTHORIZED,
          "the first request must be hello with the job secret; closing the connection");
      return;
    }
    handle_hello(conn, p, req.id(), req.hello(), now);
    return;
  }
  handle_request(conn, p, req, now);
}

Result<void> Broker::check_hello(const Peer& p, const proto::Hello& h) const {
  const rdv::ProtocolSide peer =
      h.role() == proto::ROLE_NODE
          ? rdv::ProtocolSide{"the node agent", "slurm-dp on the compute nodes"}
          : rdv::ProtocolSide{"the dp client", "the dp client (libdp, dp-top)"};
  DP_TRY(rdv::check_said_version(rdv::protocol_range(), h.protocol_version(), rdv::daemon_side(),
                                 peer));
  // The proof covers node_ranks too (empty but for node agents).
  const std::string expected =
      rdv::hello_proof(cfg_.secret, p.nonce, h.role(), h.rank(), h.world_size(), h.host(),
                       {h.node_ranks().data(), static_cast<size_t>(h.node_ranks().size())});
  if (!rdv::proof_matches(h.proof(), expected)) {
    return make_error(
        Errc::unauthorized,
        "wrong job secret: use the DP_RDV_SECRET of this step; closing the connection");
  }
  if (h.host().size() > 255)
    return make_error(Errc::invalid_argument, "hello: host name longer than 255 bytes");
  if (abort_) return make_error(Errc::aborted, abort_->message);
  if (h.role() != proto::ROLE_RANK && h.role() != proto::ROLE_AGENT &&
      h.role() != proto::ROLE_NODE) {
    return make_error(Errc::invalid_argument, "hello: unknown role " + std::to_string(h.role()));
  }
  if (h.world_size() != 0 && h.world_size() != cfg_.world_size) {
    return make_error(Errc::invalid_argument,
                      "hello: WORLD_SIZE " + std::to_string(h.world_size()) +
                          " differs from the step's world size " + std::to_string(cfg_.world_size) +
                          ": the task's environment does not belong to this step");
  }
  if (h.role() == proto::ROLE_AGENT) {
    if (agents_ >= cfg_.limits.max_agents) {
      return make_error(Errc::limit, "too many agents connected (limit " +
                                         std::to_string(cfg_.limits.max_agents) +
                                         "; ranks keep their own slots); retry later");
    }
    return {};
  }
  if (h.role() == proto::ROLE_NODE) return check_node_hello(h);
  if (h.rank() < 0 || h.rank() >= cfg_.world_size) {
    return make_error(Errc::invalid_argument, "hello: RANK " + std::to_string(h.rank()) +
                                                  " is outside 0.." +
                                                  std::to_string(cfg_.world_size - 1));
  }
  if (const ConnId holder = live_.slot(h.rank()).conn; holder != 0) {
    return make_error(Errc::conflict,
                      "rank " + std::to_string(h.rank()) + " is already connected from host " +
                          live_.slot(h.rank()).host + ": two tasks claim the same RANK");
  }
  return {};
}

void Broker::handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h,
                          Clock::time_point now) {
  if (auto ok = check_hello(p, h); !ok) {
    if (ok.error().code == Errc::unauthorized) ++rejected_auth_;
    reject_and_close(conn, id, rdv::to_wire(ok.error().code), ok.error().message);
    return;
  }
  p.state = PeerState::ready;
  p.role = h.role();
  p.rank = h.role() == proto::ROLE_RANK ? h.rank() : -1;
  p.node = h.role() == proto::ROLE_NODE ? h.rank() : -1;
  p.host = shown_value(h.host(), 255);
  p.nonce.clear();
  const ConnId predecessor =
      p.role == proto::ROLE_NODE ? peers_.node_predecessor(h, conn, restarts_.has_value()) : 0;
  if (p.role == proto::ROLE_NODE) p.node_ranks.assign(h.node_ranks().begin(), h.node_ranks().end());
  hello_budget_.remove(conn);
  if (predecessor != 0) take_over_node(predecessor, conn, now);
  else register_ranks(conn, p, now);
  reply_ok(conn, id);
  if (predecessor != 0 && restarts_) {  // a repeat of what it did already, without doing it twice
    if (auto again = restarts_->repeat_for(p.node)) out_.send(conn, restart_push(*again));
  }
  if (p.role == proto::ROLE_NODE) ask_samples(conn);
}

bool Broker::store_alone(const Call& c, const proto::Request& req) {
  auto done = torch_store_op(store_, req);
  if (!done) done = store_op(store_, req);
  if (!done) return false;
  for (const auto& key : done->changed) key_changed(c.space, key, c.now);
  // The agents name TCPStore's worker handshakes: after a restart, every
  // rank's client up means the programs met again.
  if (req.has_add() && req.add().workers() > 0 && !done->changed.empty() &&
      c.space == proto::SPACE_TORCH && restarts_ && !restarts_->machine.stopped_phase())
    restarts_->times.store_clients(req.add().workers(), c.now);
  answer(c.conn, done->reply);
  return true;
}

namespace {
proto::Response with_stats(uint64_t id, proto::Stats stats) {
  proto::Response r;
  r.set_id(id);
  *r.mutable_stats() = std::move(stats);
  return r;
}
}  // namespace

void Broker::handle_request(ConnId conn, Peer& p, const proto::Request& req,
                            Clock::time_point now) {
  const Call c{conn, p, req.id(), now, req.space()};
  switch (req.op_case()) {
    case proto::Request::kHeartbeat:
      ++heartbeats_;
      if (p.role == proto::ROLE_NODE) return node_heartbeat(c, req.heartbeat());
      // A rank's heartbeat carries its collective counters (hang and straggler detection).
      if (p.rank >= 0 && req.heartbeat().has_progress())
        report_.on_progress(p.rank, req.heartbeat().progress(), now);
      return;
    case proto::Request::kGoodbye: return op_goodbye(c, req.goodbye());
    case proto::Request::kStepSignal: return op_step_signal(c, req.step_signal());
    case proto::Request::kStoreRefused: return torch_refused(c, req.store_refused());
    case proto::Request::kStacksAnswer: return op_stacks_answer(c, req.stacks_answer());
    case proto::Request::kRestartReady: return op_restart_ready(c, req.restart_ready());
    case proto::Request::kStacks:
      return reply_error(conn, c.id, proto::PROTOCOL,
                         "stacks are asked on the step's report socket (dp-top --stacks)");
    case proto::Request::kStats: return answer(conn, with_stats(c.id, stats()));
    default: break;
  }
  // PyTorch's store outlives a failure: survivors kept (on_failure=keep)
  // use it, and a store has no way to carry the verdict to its clients. A
  // cancel only drops a call (a survivor's given-up PyTorch wait among them).
  if (abort_ && c.space != proto::SPACE_TORCH && req.op_case() != proto::Request::kCancelCall)
    return reply_error(conn, c.id, proto::ABORTED, abort_->message);
  if (!proto::Space_IsValid(c.space))
    return reply_error(conn, c.id, proto::PROTOCOL,
                       "unknown key space " + std::to_string(static_cast<int>(c.space)) +
                           ": the client is newer than dp-rendezvousd; use the same slurm-dp "
                           "release for both");
  if (store_alone(c, req)) return;
  switch (req.op_case()) {
    case proto::Request::kHello:
      return reply_error(conn, c.id, proto::PROTOCOL, "hello sent twice on one connection");
    case proto::Request::kSet: return op_set(c, req.set());
    case proto::Request::kGet: return op_get(c, req.get());
    case proto::Request::kCompareAndSet: return op_compare_and_set(c, req.compare_and_set());
    case proto::Request::kWait: return op_wait(c, req.wait());
    case proto::Request::kBarrier: return op_barrier(c, req.barrier());
    case proto::Request::kAbort: return op_abort(c, req.abort());
    case proto::Request::kRankLost: return op_rank_lost(c, req.rank_lost());
    case proto::Request::kCancelCall: return op_cancel_call(c, req.cancel_call());
    case proto::Request::kPublishPorts: return op_publish_ports(c, req.publish_ports());
    default:
      return reply_error(
          conn, c.id, proto::PROTOCOL,
          "unknown operation (field " + std::to_string(static_cast<int>(req.op_case())) +
              "): the client is newer than dp-rendezvousd; use the same slurm-dp release for both");
  }
}

AbortCause Broker::cause_of(const Peer& p, AbortCause::How how, std::string message) const {
  AbortCause c;
  c.how = how;
  c.rank = p.rank;
  c.host = p.host;
  c.message = std::move(message);
  return c;
}

void Broker::forget_peer(ConnId conn, bool goodbye) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  for (uint64_t wid : calls_.of_conn(conn)) calls_.take(wid);
  const Peer& p = it->second;
  if (p.state == PeerState::awaiting_hello) hello_budget_.remove(conn);
  if (p.state == PeerState::ready) {
    if (p.role == proto::ROLE_AGENT) --agents_;
    if (p.role != proto::ROLE_AGENT) --rank_peers_;
    if (p.role == proto::ROLE_NODE) --nodes_;
    if (p.rank >= 0) live_.disconnected(p.rank, conn, goodbye);
    for (int r : p.node_ranks) live_.disconnected(r, conn, goodbye);  // no-op for ranks gone
  }
  peers_.erase(it);
}

void Broker::abort_job(AbortCause cause) {
  if (abort_) return;
  if (restart_instead(cause)) return;
  if (cause.when == Clock::time_point{}) cause.when = Clock::now();
  // Every peer's text names the step's first failure (rank, host, how, when).
  cause.message = report_.first_failure(
      cause.rank, cause.host, cause.how, cause.message, cause.when,
      TaskExit{cause.exit_code, cause.signal, cause.worker_rank, cause.user_signal});
  abort_ = std::move(cause);
  if (restarts_) finish_record(abort_->when);  // a restart under way is told as far as it got
  log_step(cfg_, abort_->message);
  // Waits given up while the step was healthy were not news until now.
  for (const auto& line : report_.unset_waits()) log_step(cfg_, line);
  std::vector<uint64_t> ids;
  for (uint64_t wid : calls_.ids()) {
    const Waiter& w = *calls_.find(wid);
    // PyTorch's store outlives the failure: its waits stay, named.
    if (w.space == proto::SPACE_TORCH) {
      if (auto p = peers_.find(w.conn); p != peers_.end())
        torch_note_unset(p->second, w, abort_->when, false);
      continue;
    }
    ids.push_back(wid);
  }
  for (uint64_t wid : ids) fail_waiter(wid, proto::ABORTED, abort_->message);
  proto::Response push;
  push.set_id(0);
  push.set_code(proto::ABORTED);
  push.set_message(abort_->message);
  if (abort_->how == AbortCause::How::hang && abort_->rank >= 0)
    push.mutable_hang()->set_rank(abort_->rank);
  add_master_failure(push);
  // A send may drop a peer that does not read (and so change peers_): walk a copy.
  std::vector<ConnId> ready;
  ready.reserve(peers_.size());
  for (const auto& [conn, p] : peers_) {
    if (p.state == PeerState::ready) ready.push_back(conn);
  }
  for (ConnId conn : ready) {
    if (peers_.count(conn)) out_.send(conn, push);
  }
  // A node lost earlier (a spare took its place) still holds tasks in Slurm's eyes.
  const bool unreachable = abort_->how == AbortCause::How::node_lost ||
                           abort_->how == AbortCause::How::node_silent ||
                           (restarts_ && restarts_->roster.lost() > 0);
  if (unreachable && cfg_.limits.on_failure == OnFailure::end) out_.end_step_in_slurm(*abort_);
}

void Broker::on_disconnect(ConnId conn, Clock::time_point now) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return (void)fenced_drop(conn, now);
  std::optional<AbortCause> lost = loss_of(conn, it->second, now);
  const Peer gone = it->second;
  forget_peer(conn);
  if (!lost && restarts_) lost = restarts_->spare_loss(gone);
  if (lost) abort_job(std::move(*lost));
  restart_node_left(gone, now);  // no answer will come from it
}

std::optional<AbortCause> Broker::loss_of(ConnId conn, const Peer& p, Clock::time_point now) const {
  if (!peers_.holds_ranks(conn, p)) return std::nullopt;
  AbortCause c =
      p.role == proto::ROLE_NODE
          ? peers_.node_loss(conn, p, AbortCause::How::node_lost,
                             "lost its connection to the rendezvous daemon")
          : cause_of(p, AbortCause::How::lost_connection,
                     peers_.describe_peer(p) +
                         " lost its connection to the rendezvous daemon without saying goodbye: "
                         "the task exited, crashed or was killed");
  c.when = now;
  c.peer_closed = p.role == proto::ROLE_NODE;
  explain_by_user_signal(c, now);
  return c;
}

std::vector<ConnId> Broker::silence_suspects(Clock::time_point now) const {
  std::vector<ConnId> out;
  for (int r : live_.silent(now)) out.push_back(live_.slot(r).conn);
  // A node agent's ranks share its connection: read it once.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Broker::judge_silence(Clock::time_point now) {
  const std::vector<int> silent = live_.silent(now);
  for (int r : silent) {
    const ConnId c = live_.slot(r).conn;
    auto it = peers_.find(c);
    if (it == peers_.end()) continue;
    if (it->second.role == proto::ROLE_NODE && peers_.node_fell_silent(c, it->second, silent)) {
      AbortCause node = peers_.node_silence(c, it->second, cfg_.limits.heartbeat_timeout);
      reject_and_close(c, 0, proto::TIMEOUT, "no heartbeat for " + ms_text(live_.silence_limit()));
      abort_job(std::move(node));
      continue;
    }
    const std::string who = peers_.describe_rank(r);
    AbortCause cause;
    cause.how = AbortCause::How::silence;
    cause.rank = r;
    cause.host = live_.slot(r).host;
    cause.node = it->second.node;
    const auto limit = live_.silence_limit();
    reject_and_close(c, 0, proto::TIMEOUT, "no heartbeat for " + ms_text(limit));
    cause.message =
        who + " sent no heartbeat for " + ms_text(limit) +
        " while other ranks were heard: the task is stopped, hangs with its I/O thread, or its "
        "node is unreachable (dp-rendezvousd --heartbeat-timeout-ms; site setting "
        "heartbeat_timeout_s)";
    abort_job(std::move(cause));
  }
}

void Broker::judge_hang(Clock::time_point now) {
  auto hang = report_.check_hang(now);
  if (!hang) return;
  AbortCause c;
  c.how = AbortCause::How::hang;
  c.rank = hang->rank;
  if (hang->rank >= 0 && hang->rank < cfg_.world_size) c.host = live_.slot(hang->rank).host;
  c.when = now;
  c.message = hang->message;
  hang_found(std::move(c), hang->which, {});
}

void Broker::hang_found(AbortCause cause, const std::string& which,
                        const std::vector<std::string>& view, bool may_end) {
  const bool ends = cfg_.limits.end_on_hang && may_end;
  if (report_.note_hang(which, cause.message, view, cause.when)) {
    out_.notice("slurm-dp: step " + cfg_.job_id + "." + cfg_.step_id + ": hang: " + cause.message +
                (ends      ? "; the step is ended (--dp-on-hang=end)"
                 : may_end ? "; the step runs on (--dp-on-hang=end ends it)"
                           : "; the step runs on (a rank that cannot be read is never judged "
                             "stuck)"));
    log_step(cfg_, cause.message);
  }
  if (ends) abort_job(std::move(cause));
}

void Broker::on_tick(Clock::time_point now) {
  live_.tick(now);
  expire_waiters(now);
  std::vector<ConnId> late_hello;
  for (const auto& [conn, p] : peers_) {
    if (p.state == PeerState::awaiting_hello && now - p.connected_at >= cfg_.limits.hello_timeout) {
      late_hello.push_back(conn);
    }
  }
  for (ConnId c : late_hello) {
    reject_and_close(c, 0, proto::TIMEOUT,
                     "no hello within " + ms_text(cfg_.limits.hello_timeout) +
                         " of connecting; closing the connection");
  }
  // While the programs stop and start again, nobody's silence or stillness counts.
  const bool steady = !restarts_ || restarts_->machine.phase() == RestartMachine::Phase::running;
  if (!abort_ && steady) judge_silence(now);
  if (!abort_ && steady) judge_hang(now);
  if (!abort_ && steady) watch_stacks(now);
  if (!abort_ && steady) watch_stragglers(now);
  watch_restarts(now);
}

void Broker::ping_all(const std::function<bool(ConnId)>& quiet) {
  proto::Response ping;  // id 0, code OK, nothing else: a keepalive
  std::vector<ConnId> ready;
  for (const auto& [conn, p] : peers_) {
    if (p.state == PeerState::ready && (!quiet || quiet(conn))) ready.push_back(conn);
  }
  for (ConnId conn : ready) {
    if (peers_.count(conn)) out_.send(conn, ping);
  }
}

}  // namespace dp::daemon
