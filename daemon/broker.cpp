#include "broker.hpp"

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
    : step_(std::move(cfg), out, now), watches_(step_, *this, now) {}

uint32_t Broker::max_frame_bytes(ConnId conn) const {
  auto it = step_.peers.find(conn);
  if (it == step_.peers.end() || it->second.state == PeerState::awaiting_hello)
    return rdv::kHelloFrameLimit;
  const BrokerLimits& l = step_.cfg.limits;
  return std::max(l.max_request_bytes, l.max_key_bytes + l.max_value_bytes) +
         rdv::kRequestEnvelopeBytes;
}

bool Broker::finished() const {
  return step_.cfg.world_size > 0 && step_.live.goodbye_count() == step_.cfg.world_size &&
         step_.peers.empty();
}

void Broker::reject_and_close(ConnId conn, uint64_t id, proto::Code code, std::string message) {
  std::optional<AbortCause> lost;
  if (auto it = step_.peers.find(conn); it != step_.peers.end() &&
                                        step_.peers.holds_ranks(conn, it->second) &&
                                        code != proto::TIMEOUT) {
    const std::string why = "was disconnected by the rendezvous daemon (" + message + ")";
    lost = it->second.role == proto::ROLE_NODE
               ? step_.peers.node_loss(conn, it->second, AbortCause::How::refused, why)
               : cause_of(it->second, AbortCause::How::refused,
                          step_.peers.describe_peer(it->second) + " " + why);
  }
  std::optional<Peer> gone;
  if (auto it = step_.peers.find(conn); it != step_.peers.end()) gone = it->second;
  step_.reply_error(conn, id, code, std::move(message));
  forget_peer(conn, false);
  step_.out.close(conn);
  if (lost) abort_job(std::move(*lost));
  if (gone) restart_.node_left(*gone, Clock::now());  // no answer will come from it
}

bool Broker::on_oversized_frame(ConnId conn, uint32_t announced, uint32_t limit,
                                std::string_view head) {
  auto it = step_.peers.find(conn);
  if (it == step_.peers.end()) return false;
  const std::string what = "frame of " + std::to_string(announced) +
                           " bytes exceeds the limit of " + std::to_string(limit) + " bytes";
  if (it->second.state == PeerState::awaiting_hello) {
    reject_and_close(conn, 0, proto::LIMIT, what + " before hello; closing the connection");
    return false;
  }
  ++step_.count.requests;
  step_.reply_error(conn, rdv::leading_request_id(head), proto::LIMIT,
                    "request refused: " + what +
                        " (a request's keys and values: dp-rendezvousd --max-request-bytes, "
                        "--max-value-bytes); the connection stays");
  return true;
}

void Broker::on_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  auto it = step_.peers.find(conn);
  if (it == step_.peers.end()) return (void)restart_.fenced_frame(conn, payload, now);
  Peer& p = it->second;
  if (p.rank >= 0) step_.live.heard(p.rank, now);
  ++step_.count.requests;
  proto::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    reject_and_close(conn, 0, proto::PROTOCOL,
                     "malformed frame: not a rendezvous request; closing the connection (is this a "
                     "dp client of the same release?)");
    return;
  }
  if (p.state == PeerState::awaiting_hello) {
    if (req.op_case() != proto::Request::kHello) {
      ++step_.count.rejected_auth;
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
      rdv::hello_proof(step_.cfg.secret, p.nonce, h.role(), h.rank(), h.world_size(), h.host(),
                       {h.node_ranks().data(), static_cast<size_t>(h.node_ranks().size())});
  if (!rdv::proof_matches(h.proof(), expected)) {
    return make_error(
        Errc::unauthorized,
        "wrong job secret: use the DP_RDV_SECRET of this step; closing the connection");
  }
  if (h.host().size() > 255)
    return make_error(Errc::invalid_argument, "hello: host name longer than 255 bytes");
  if (step_.abort) return make_error(Errc::aborted, step_.abort->message);
  if (h.role() != proto::ROLE_RANK && h.role() != proto::ROLE_AGENT &&
      h.role() != proto::ROLE_NODE) {
    return make_error(Errc::invalid_argument, "hello: unknown role " + std::to_string(h.role()));
  }
  if (h.world_size() != 0 && h.world_size() != step_.cfg.world_size) {
    return make_error(Errc::invalid_argument,
                      "hello: WORLD_SIZE " + std::to_string(h.world_size()) +
                          " differs from the step's world size " +
                          std::to_string(step_.cfg.world_size) +
                          ": the task's environment does not belong to this step");
  }
  if (h.role() == proto::ROLE_AGENT) {
    if (step_.count.agents >= step_.cfg.limits.max_agents) {
      return make_error(Errc::limit, "too many agents connected (limit " +
                                         std::to_string(step_.cfg.limits.max_agents) +
                                         "; ranks keep their own slots); retry later");
    }
    return {};
  }
  if (h.role() == proto::ROLE_NODE) return node_agents_.check_hello(h);
  if (h.rank() < 0 || h.rank() >= step_.cfg.world_size) {
    return make_error(Errc::invalid_argument, "hello: RANK " + std::to_string(h.rank()) +
                                                  " is outside 0.." +
                                                  std::to_string(step_.cfg.world_size - 1));
  }
  if (const ConnId holder = step_.live.slot(h.rank()).conn; holder != 0) {
    return make_error(Errc::conflict,
                      "rank " + std::to_string(h.rank()) + " is already connected from host " +
                          step_.live.slot(h.rank()).host + ": two tasks claim the same RANK");
  }
  return {};
}

void Broker::handle_hello(ConnId conn, Peer& p, uint64_t id, const proto::Hello& h,
                          Clock::time_point now) {
  if (auto ok = check_hello(p, h); !ok) {
    if (ok.error().code == Errc::unauthorized) ++step_.count.rejected_auth;
    reject_and_close(conn, id, rdv::to_wire(ok.error().code), ok.error().message);
    return;
  }
  p.state = PeerState::ready;
  p.role = h.role();
  p.rank = h.role() == proto::ROLE_RANK ? h.rank() : -1;
  p.node = h.role() == proto::ROLE_NODE ? h.rank() : -1;
  p.host = shown_value(h.host(), 255);
  p.nonce.clear();
  const ConnId predecessor = p.role == proto::ROLE_NODE
                                 ? step_.peers.node_predecessor(h, conn, step_.restarts.has_value())
                                 : 0;
  if (p.role == proto::ROLE_NODE) p.node_ranks.assign(h.node_ranks().begin(), h.node_ranks().end());
  step_.hello_budget.remove(conn);
  if (predecessor != 0) node_agents_.take_over(predecessor, conn, now);
  else node_agents_.register_ranks(conn, p, now);
  step_.reply_ok(conn, id);
  if (predecessor != 0 &&
      step_.restarts) {  // a repeat of what it did already, without doing it twice
    if (auto again = step_.restarts->repeat_for(p.node)) step_.out.send(conn, restart_push(*again));
  }
  if (p.role == proto::ROLE_NODE) watches_.ask_samples(conn);
}

bool Broker::store_alone(const Call& c, const proto::Request& req) {
  auto done = torch_store_op(step_.store, req);
  if (!done) done = store_op(step_.store, req);
  if (!done) return false;
  for (const auto& key : done->changed) blocking_.key_changed(c.space, key, c.now);
  // The agents name TCPStore's worker handshakes: after a restart, every
  // rank's client up means the programs met again.
  if (req.has_add() && req.add().workers() > 0 && !done->changed.empty() &&
      c.space == proto::SPACE_TORCH && step_.restarts && !step_.restarts->machine.stopped_phase())
    step_.restarts->times.store_clients(req.add().workers(), c.now);
  step_.answer(c.conn, done->reply);
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
      ++step_.count.heartbeats;
      if (p.role == proto::ROLE_NODE) return node_agents_.heartbeat(c, req.heartbeat());
      // A rank's heartbeat carries its collective counters (hang and straggler detection).
      if (p.rank >= 0 && req.heartbeat().has_progress())
        step_.report.on_progress(p.rank, req.heartbeat().progress(), now);
      return;
    case proto::Request::kGoodbye:
      return p.role == proto::ROLE_NODE ? node_agents_.goodbye(c, req.goodbye())
                                        : ops_.goodbye(c, req.goodbye());
    case proto::Request::kStepSignal: return node_agents_.step_signal(c, req.step_signal());
    case proto::Request::kStoreRefused: return node_agents_.store_refused(c, req.store_refused());
    case proto::Request::kStacksAnswer: return watches_.answer(c, req.stacks_answer());
    case proto::Request::kRestartReady: return restart_.ready(c, req.restart_ready());
    case proto::Request::kStacks:
      return step_.reply_error(conn, c.id, proto::PROTOCOL,
                               "stacks are asked on the step's report socket (dp-top --stacks)");
    case proto::Request::kStats: return step_.answer(conn, with_stats(c.id, stats()));
    default: break;
  }
  // PyTorch's store outlives a failure: survivors kept (on_failure=keep)
  // use it, and a store has no way to carry the verdict to its clients. A
  // cancel only drops a call (a survivor's given-up PyTorch wait among them).
  if (step_.abort && c.space != proto::SPACE_TORCH && req.op_case() != proto::Request::kCancelCall)
    return step_.reply_error(conn, c.id, proto::ABORTED, step_.abort->message);
  if (!proto::Space_IsValid(c.space))
    return step_.reply_error(conn, c.id, proto::PROTOCOL,
                             "unknown key space " + std::to_string(static_cast<int>(c.space)) +
                                 ": the client is newer than dp-rendezvousd; use the same slurm-dp "
                                 "release for both");
  if (store_alone(c, req)) return;
  switch (req.op_case()) {
    case proto::Request::kHello:
      return step_.reply_error(conn, c.id, proto::PROTOCOL, "hello sent twice on one connection");
    case proto::Request::kSet: return ops_.set(c, req.set());
    case proto::Request::kGet: return ops_.get(c, req.get());
    case proto::Request::kCompareAndSet: return ops_.compare_and_set(c, req.compare_and_set());
    case proto::Request::kWait: return ops_.wait(c, req.wait());
    case proto::Request::kBarrier: return ops_.barrier(c, req.barrier());
    case proto::Request::kAbort: return ops_.abort(c, req.abort());
    case proto::Request::kRankLost: return node_agents_.rank_lost(c, req.rank_lost());
    case proto::Request::kCancelCall: return blocking_.cancel(c, req.cancel_call());
    case proto::Request::kPublishPorts: return ops_.publish_ports(c, req.publish_ports());
    default:
      return step_.reply_error(
          conn, c.id, proto::PROTOCOL,
          "unknown operation (field " + std::to_string(static_cast<int>(req.op_case())) +
              "): the client is newer than dp-rendezvousd; use the same slurm-dp release for both");
  }
}

void Broker::forget_peer(ConnId conn, bool goodbye) {
  auto it = step_.peers.find(conn);
  if (it == step_.peers.end()) return;
  for (uint64_t wid : step_.calls.of_conn(conn)) step_.calls.take(wid);
  const Peer& p = it->second;
  if (p.state == PeerState::awaiting_hello) step_.hello_budget.remove(conn);
  if (p.state == PeerState::ready) {
    if (p.role == proto::ROLE_AGENT) --step_.count.agents;
    if (p.role != proto::ROLE_AGENT) --step_.count.rank_peers;
    if (p.role == proto::ROLE_NODE) --step_.count.nodes;
    if (p.rank >= 0) step_.live.disconnected(p.rank, conn, goodbye);
    for (int r : p.node_ranks) step_.live.disconnected(r, conn, goodbye);  // no-op for ranks gone
  }
  step_.peers.erase(it);
}

void Broker::abort_job(AbortCause cause) {
  if (step_.abort) return;
  if (restart_.instead(cause)) return;
  if (cause.when == Clock::time_point{}) cause.when = Clock::now();
  // Every peer's text names the step's first failure (rank, host, how, when).
  cause.message = step_.report.first_failure(
      cause.rank, cause.host, cause.how, cause.message, cause.when,
      TaskExit{cause.exit_code, cause.signal, cause.worker_rank, cause.user_signal});
  step_.abort = std::move(cause);
  if (step_.restarts)
    restart_.finish_record(step_.abort->when);  // a restart under way is told as far as it got
  step_.log(step_.abort->message);
  // Waits given up while the step was healthy were not news until now.
  for (const auto& line : step_.report.unset_waits()) step_.log(line);
  std::vector<uint64_t> ids;
  for (uint64_t wid : step_.calls.ids()) {
    const Waiter& w = *step_.calls.find(wid);
    // PyTorch's store outlives the failure: its waits stay, named.
    if (w.space == proto::SPACE_TORCH) {
      if (auto p = step_.peers.find(w.conn); p != step_.peers.end())
        blocking_.note_unset(p->second, w, step_.abort->when, false);
      continue;
    }
    ids.push_back(wid);
  }
  for (uint64_t wid : ids) blocking_.fail(wid, proto::ABORTED, step_.abort->message);
  proto::Response push;
  push.set_id(0);
  push.set_code(proto::ABORTED);
  push.set_message(step_.abort->message);
  if (step_.abort->how == AbortCause::How::hang && step_.abort->rank >= 0)
    push.mutable_hang()->set_rank(step_.abort->rank);
  step_.add_master_failure(push);
  // A send may drop a peer that does not read (and so change step_.peers): walk a copy.
  std::vector<ConnId> ready;
  ready.reserve(step_.peers.size());
  for (const auto& [conn, p] : step_.peers) {
    if (p.state == PeerState::ready) ready.push_back(conn);
  }
  for (ConnId conn : ready) {
    if (step_.peers.count(conn)) step_.out.send(conn, push);
  }
  // A node lost earlier (a spare took its place) still holds tasks in Slurm's eyes.
  const bool unreachable = step_.abort->how == AbortCause::How::node_lost ||
                           step_.abort->how == AbortCause::How::node_silent ||
                           (step_.restarts && step_.restarts->roster.lost() > 0);
  if (unreachable && step_.cfg.limits.on_failure == OnFailure::end)
    step_.out.end_step_in_slurm(*step_.abort);
}

void Broker::on_disconnect(ConnId conn, Clock::time_point now) {
  auto it = step_.peers.find(conn);
  if (it == step_.peers.end()) return (void)restart_.fenced_drop(conn, now);
  std::optional<AbortCause> lost = loss_of(conn, it->second, now);
  const Peer gone = it->second;
  forget_peer(conn, false);
  if (!lost && step_.restarts) lost = step_.restarts->spare_loss(gone);
  if (lost) abort_job(std::move(*lost));
  restart_.node_left(gone, now);  // no answer will come from it
}

std::optional<AbortCause> Broker::loss_of(ConnId conn, const Peer& p, Clock::time_point now) const {
  if (!step_.peers.holds_ranks(conn, p)) return std::nullopt;
  AbortCause c =
      p.role == proto::ROLE_NODE
          ? step_.peers.node_loss(conn, p, AbortCause::How::node_lost,
                                  "lost its connection to the rendezvous daemon")
          : cause_of(p, AbortCause::How::lost_connection,
                     step_.peers.describe_peer(p) +
                         " lost its connection to the rendezvous daemon without saying goodbye: "
                         "the task exited, crashed or was killed");
  c.when = now;
  c.peer_closed = p.role == proto::ROLE_NODE;
  node_agents_.explain_by_user_signal(c, now);
  return c;
}

std::vector<ConnId> Broker::silence_suspects(Clock::time_point now) const {
  std::vector<ConnId> out;
  for (int r : step_.live.silent(now)) out.push_back(step_.live.slot(r).conn);
  // A node agent's ranks share its connection: read it once.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Broker::judge_silence(Clock::time_point now) {
  const std::vector<int> silent = step_.live.silent(now);
  for (int r : silent) {
    const ConnId c = step_.live.slot(r).conn;
    auto it = step_.peers.find(c);
    if (it == step_.peers.end()) continue;
    if (it->second.role == proto::ROLE_NODE &&
        step_.peers.node_fell_silent(c, it->second, silent)) {
      AbortCause node = step_.peers.node_silence(c, it->second, step_.cfg.limits.heartbeat_timeout);
      reject_and_close(c, 0, proto::TIMEOUT,
                       "no heartbeat for " + ms_text(step_.live.silence_limit()));
      abort_job(std::move(node));
      continue;
    }
    const std::string who = step_.peers.describe_rank(r);
    AbortCause cause;
    cause.how = AbortCause::How::silence;
    cause.rank = r;
    cause.host = step_.live.slot(r).host;
    cause.node = it->second.node;
    const auto limit = step_.live.silence_limit();
    reject_and_close(c, 0, proto::TIMEOUT, "no heartbeat for " + ms_text(limit));
    cause.message =
        who + " sent no heartbeat for " + ms_text(limit) +
        " while other ranks were heard: the task is stopped, hangs with its I/O thread, or its "
        "node is unreachable (dp-rendezvousd --heartbeat-timeout-ms; site setting "
        "heartbeat_timeout_s)";
    abort_job(std::move(cause));
  }
}

void Broker::on_tick(Clock::time_point now) {
  step_.live.tick(now);
  blocking_.expire(now);
  std::vector<ConnId> late_hello;
  for (const auto& [conn, p] : step_.peers) {
    if (p.state == PeerState::awaiting_hello &&
        now - p.connected_at >= step_.cfg.limits.hello_timeout) {
      late_hello.push_back(conn);
    }
  }
  for (ConnId c : late_hello) {
    reject_and_close(c, 0, proto::TIMEOUT,
                     "no hello within " + ms_text(step_.cfg.limits.hello_timeout) +
                         " of connecting; closing the connection");
  }
  // While the programs stop and start again, nobody's silence or stillness counts.
  const bool steady =
      !step_.restarts || step_.restarts->machine.phase() == RestartMachine::Phase::running;
  if (!step_.abort && steady) judge_silence(now);
  if (!step_.abort && steady) watches_.tick(now);
  restart_.watch(now);
}

void Broker::ping(const std::vector<ConnId>& conns) {
  const proto::Response keepalive;  // id 0, code OK, nothing else
  for (ConnId conn : conns) {
    auto it = step_.peers.find(conn);
    if (it != step_.peers.end() && it->second.state == PeerState::ready)
      step_.out.send(conn, keepalive);
  }
}

}  // namespace dp::daemon
