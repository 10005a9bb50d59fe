#include "agent_core.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <iterator>

#include "dp/duration_text.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "node_hello.hpp"
#include "protocol_version.hpp"
#include "stacks_ask.hpp"
#include "step_ports_value.hpp"

namespace dp::agent {
AgentCore::AgentCore(AgentConfig cfg, AgentOutbox& out, Clock::time_point now)
    : cfg_(std::move(cfg)), out_(out), daemon_(cfg_.daemon_silence, cfg_.heartbeat_every, now) {
  if (!cfg_.make_nonce) cfg_.make_nonce = rdv::random_nonce;
  std::sort(cfg_.node_ranks.begin(), cfg_.node_ranks.end());
  for (int32_t r : cfg_.node_ranks) ranks_[r];
  next_beat_ = now + cfg_.heartbeat_every;
  next_ping_ = now + cfg_.ping_every;
}

// ---- the daemon link ----

void AgentCore::send_hello(const proto::Response& challenge) {
  auto hello = node_hello_request(NodeHello{cfg_.daemon_addr, cfg_.secret, cfg_.host,
                                            cfg_.world_size, cfg_.node_ranks, cfg_.node},
                                  challenge);
  if (!hello) return on_daemon_lost(hello.error().message);
  const proto::Request& req = *hello;
  if (req.hello().proof().empty())  // sent empty, it would be refused as a wrong secret
    return on_daemon_lost("cannot compute the hello proof: libcrypto's HMAC failed");
  out_.to_daemon(req);
}

void AgentCore::hello_answered(const proto::Response& reply, Clock::time_point now) {
  if (link_ != Link::awaiting_challenge) return;
  link_ = Link::awaiting_hello_reply;
  on_daemon_response(reply, now);
}

void AgentCore::on_daemon_response(const proto::Response& r, Clock::time_point now) {
  if (link_ == Link::gone) return;
  daemon_.heard(now);
  if (link_ == Link::awaiting_challenge) {
    if (r.code() != proto::OK || r.id() != 0 || r.challenge().size() != rdv::kNonceBytes)
      return on_daemon_lost("the step's daemon refused the node: " + rdv::error_from(r).message);
    link_ = Link::awaiting_hello_reply;
    return send_hello(r);
  }
  if (link_ == Link::awaiting_hello_reply) {
    if (r.id() == 0) return daemon_push(r);
    // Refused as late: the step was aborted, maybe by the master node's failure.
    if (r.has_master_failure() && !step_ports_)
      step_ports_ = StepPortsValue{rdv::from_proto(r.master_failure())};
    if (r.code() != proto::OK)
      return on_daemon_lost("the step's daemon refused the node's hello: " +
                            rdv::error_from(r).message);
    link_ = Link::ready;
    auto queued = std::move(queued_);
    for (auto& q : queued) out_.to_daemon(q);
    return;
  }
  link_response(r);
}

void AgentCore::link_response(const proto::Response& r) {
  if (r.id() == 0) return daemon_push(r);
  auto it = pending_.find(r.id());
  if (it == pending_.end()) return;
  const Upstream u = std::move(it->second);
  pending_.erase(it);
  answered(u, r);
}

// Pushes: the keepalive needs nothing; an abort goes to every local rank; an
// ask for stacks, or to sample, to the I/O layer, which reads them off the loop.
void AgentCore::daemon_push(const proto::Response& r) {
  if (r.code() == proto::OK && r.has_stacks_ask())
    return out_.read_stacks(r.stacks_ask().ask(),
                            std::chrono::milliseconds(r.stacks_ask().deadline_ms()),
                            r.stacks_ask().flight());
  if (r.code() == proto::OK && r.has_sample_ask())
    return out_.sample_ranks(std::chrono::milliseconds(r.sample_ask().every_ms()));
  if (r.code() == proto::OK && r.has_restart()) return on_restart(r.restart());
  if (r.code() != proto::ABORTED) return;
  const bool first = !abort_;
  if (!abort_) abort_ = r;
  for (auto& [conn, l] : locals_)
    if (l.ready) out_.to_rank(conn, r);
  if (!first) return;
  // One verdict, carried out on every node: tasks that never talk to us
  // (unmodified frameworks) would otherwise wait in a collective for minutes.
  // First the survivors are read for the report (a hang's verdict carries
  // its own read; kept survivors run on and can be read by dp-top).
  if (r.has_hang() || cfg_.on_failure == OnFailure::keep) return end_tasks(r.message());
  pending_end_ = PendingEnd{r.message(), told_ranks(), std::nullopt};
  out_.read_stacks(rdv::kStacksAtFailure, kAtFailureRead, false);
}

// STOP: the node's programs end (their ranks' connections with them, and
// what they waited for); START: the node holds its (maybe new) ranks afresh,
// nothing cached of the old programs' keys (the daemon cleared them).
void AgentCore::on_restart(const proto::Restart& r) {
  if (r.phase() == proto::Restart::FENCE) {
    fence_answer_due_ = r.generation();
    if (!fenced_) return fence("the step's daemon gave the node's place to a spare (FENCE)");
    return fenced();  // killed already: the daemon hears it (again) now
  }
  if (abort_ || fenced_) return;
  const std::pair<uint64_t, int> order{r.generation(), r.phase()};
  if (order == last_restart_) return out_.restart(r);  // a repeat: answered again, not done
  if (r.phase() == proto::Restart::STOP || r.phase() == proto::Restart::START)
    last_restart_ = order;
  if (r.phase() == proto::Restart::STOP) {
    restarting_ = true;
    for (auto& [conn, l] : locals_) out_.close_rank(conn);
    locals_.clear();
    gets_.clear();
    barriers_.clear();
    for (auto it = pending_.begin(); it != pending_.end();)
      it = it->second.conn != 0 ? pending_.erase(it) : std::next(it);
  } else if (r.phase() == proto::Restart::START) {
    restarting_ = false;
    cfg_.node_ranks.assign(r.node_ranks().begin(), r.node_ranks().end());
    ranks_.clear();
    for (int32_t rank : cfg_.node_ranks) ranks_[rank];
    heard_.clear();
    cache_.clear();
    cache_bytes_ = 0;
  }
  out_.restart(r);
}

void AgentCore::restart_ready(uint64_t generation, proto::Restart::Phase phase) {
  proto::Request req;
  req.mutable_restart_ready()->set_generation(generation);
  req.mutable_restart_ready()->set_phase(phase);
  notify(std::move(req));
}

// A node whose place another may take (the daemon unheard for fence_after,
// lost, or its FENCE) kills its programs at once, whole trees: what runs on
// a cut-off or thawed node would otherwise train and write beside its spare.
void AgentCore::fence(const std::string& why) {
  if (fenced_) return;
  fenced_ = why;
  restarting_ = true;  // the programs' ends are the fence's doing, no loss
  out_.fence_programs(why);
}

void AgentCore::fenced() {
  if (!fence_answer_due_ || link_ == Link::gone) return;
  restart_ready(*fence_answer_due_, proto::Restart::FENCE);
  fence_answer_due_.reset();
}

void AgentCore::stacks_sent(uint64_t ask) {
  if (ask == rdv::kStacksAtFailure) end_pending();
}

void AgentCore::end_pending() {
  if (!pending_end_) return;
  const PendingEnd end = std::move(*pending_end_);
  pending_end_.reset();
  out_.end_tasks(end.why, end.told);
}

void AgentCore::on_daemon_doubt(const std::string& why, Clock::time_point now) {
  if (link_ != Link::ready) return;
  link_ = Link::relinking;
  doubt_ = why;
  const auto deadline = daemon_.bounded() ? daemon_.deadline() : now + std::chrono::hours(24 * 365);
  out_.relink(deadline);
}

void AgentCore::relinked(const proto::Response& reply, Clock::time_point now) {
  if (link_ != Link::relinking) return;
  daemon_.heard(now);
  if (reply.code() != proto::OK) {
    // The step failed while the node was away: its verdict, carried out here too.
    if (reply.code() == proto::ABORTED) daemon_push(reply);
    return on_daemon_lost("the step's daemon refused the node's new connection: " +
                          rdv::error_from(reply).message);
  }
  link_ = Link::ready;
  ++relinks_;
  // Queued requests never went out: they go with the queue, once.
  std::set<uint64_t> queued_ids;
  for (const auto& q : queued_) queued_ids.insert(q.id());
  resend_pending(queued_ids);
  auto queued = std::move(queued_);
  for (auto& q : queued) out_.to_daemon(q);
}

namespace {
// One of the node's own requests whose effect or answer differs when applied
// twice (a sink's say so themselves: send_for's resend, from the store's
// opcode table).
bool applied_once_only(const proto::Request& r) { return r.has_add() || r.has_compare_and_set(); }
}  // namespace

// The daemon dropped the old connection's pending calls (and undid its
// barrier arrivals): they go again, in order. Sets and gets are idempotent;
// an add, a compare-and-set, ... may have been applied already, so its caller
// hears that its outcome is unknown instead.
void AgentCore::resend_pending(const std::set<uint64_t>& queued) {
  std::vector<uint64_t> ids;
  for (const auto& [id, u] : pending_)
    if (!queued.count(id)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint64_t id : ids) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    const proto::Request& sent = it->second.sent;
    const bool resend =
        it->second.kind == Kind::sink ? it->second.resend : !applied_once_only(sent);
    if (resend) {
      out_.to_daemon(sent);
      continue;
    }
    proto::Response r;
    r.set_id(id);
    r.set_code(proto::CONNECTION);
    r.set_message("slurm-dp node agent on " + cfg_.host +
                  ": the connection to the step's daemon was replaced after an outage while "
                  "this request was on its way; whether it was applied is unknown");
    link_response(r);
  }
}

void AgentCore::relink_failed(const std::string& why, Clock::time_point now) {
  if (link_ != Link::relinking) return;
  on_daemon_lost(silence_text(now) + "; no new connection in that time: " + why);
}

void AgentCore::on_daemon_lost(const std::string& why) {
  if (link_ == Link::gone) return;
  link_ = Link::gone;
  end_reason_ = why;
  if (cfg_.fence_after.count() > 0) fence(why);
  if (!step_ports_) step_ports_ = make_error(Errc::connection, why);
  proto::Response push;
  push.set_code(proto::ABORTED);
  push.set_message("slurm-dp: node " + cfg_.host +
                   " lost the step's daemon (dp-rendezvousd): " + why);
  if (pending_end_) {  // the daemon is gone while the survivors were read: no report to wait for
    end_pending();
  } else if (!abort_) {
    end_tasks(push.message());  // while the told ranks are still known
  }
  for (auto& [conn, l] : locals_) {
    if (l.ready) out_.to_rank(conn, push);
    out_.close_rank(conn);
  }
  locals_.clear();
}

void AgentCore::end_tasks(const std::string& why) {
  if (cfg_.on_failure == OnFailure::end) out_.end_tasks(why, told_ranks());
}

std::set<int> AgentCore::told_ranks() const {
  std::set<int> told;
  for (const auto& [conn, l] : locals_)
    if (l.ready) told.insert(l.rank);
  return told;
}

uint64_t AgentCore::upstream(proto::Request req, Upstream what) {
  const uint64_t id = next_up_++;
  req.set_id(id);
  what.sent = std::move(req);  // kept for a new connection after an outage
  const proto::Request& sent = pending_.emplace(id, std::move(what)).first->second.sent;
  if (link_ == Link::ready) {
    out_.to_daemon(sent);
  } else if (link_ != Link::gone) {
    queued_.push_back(sent);
  }
  return id;
}

void AgentCore::publish_step_ports(const StepPortsValue& v) {
  proto::Request req;
  rdv::to_proto(v, *req.mutable_publish_ports()->mutable_value());
  upstream(std::move(req),
           Upstream{Kind::exchange, 0, 0, kStepPortsKey, rdv::encode_step_ports(v)});
  if (!v.failure) return;
  // After the publish on the same connection: nodes waiting for the port get
  // the failure first.
  proto::Request abort;
  abort.mutable_abort()->set_reason(master_failure_text(*v.failure));
  rdv::to_proto(*v.failure, *abort.mutable_abort()->mutable_master_failure());
  upstream(std::move(abort), Upstream{Kind::plain, 0, 0, {}, {}});
}

void AgentCore::fetch_step_ports(std::chrono::milliseconds timeout) {
  proto::Request req;
  auto* g = req.mutable_get();
  g->set_key(kStepPortsKey);
  g->set_blocking(true);
  g->set_timeout_ms(static_cast<uint32_t>(std::max<long long>(1, timeout.count())));
  upstream(std::move(req), Upstream{Kind::exchange, 0, 0, kStepPortsKey, {}});
}

// The published value (the master node's own, or what the daemon holds), or
// the master node's failure an abort carries, or why the exchange failed.
void AgentCore::step_ports_answered(const Upstream& u, const proto::Response& r) {
  if (r.has_master_failure()) {
    step_ports_ = StepPortsValue{rdv::from_proto(r.master_failure())};
  } else if (r.code() != proto::OK) {
    step_ports_ = rdv::error_from(r);
  } else {
    step_ports_ = rdv::decode_step_ports(r.value().empty() ? u.value : r.value());
  }
}

// ---- local ranks ----

void AgentCore::on_rank_connect(ConnId conn, Clock::time_point now) {
  auto nonce = cfg_.make_nonce();
  if (!nonce) return reject(conn, 0, rdv::to_wire(nonce.error().code), nonce.error().message);
  Local l;
  l.nonce = std::move(*nonce);
  l.since = now;
  proto::Response challenge;
  challenge.set_challenge(l.nonce);
  challenge.set_protocol_version(rdv::protocol_range().newest);
  locals_.emplace(conn, std::move(l));
  out_.to_rank(conn, challenge);
}

uint32_t AgentCore::max_frame_bytes(ConnId conn) const {
  auto it = locals_.find(conn);
  return it != locals_.end() && it->second.ready ? cfg_.max_frame_bytes : rdv::kHelloFrameLimit;
}

void AgentCore::reply(ConnId conn, uint64_t id, proto::Code code, const std::string& why) {
  proto::Response r;
  r.set_id(id);
  r.set_code(code);
  if (!why.empty()) r.set_message(why);
  out_.to_rank(conn, r);
}

void AgentCore::reject(ConnId conn, uint64_t id, proto::Code code, const std::string& why) {
  reply(conn, id, code, "slurm-dp node agent on " + cfg_.host + ": " + why);
  locals_.erase(conn);
  out_.close_rank(conn);
}

bool AgentCore::on_rank_oversized(ConnId conn, uint32_t announced, std::string_view head) {
  auto it = locals_.find(conn);
  if (it == locals_.end()) return false;
  const std::string what = "frame of " + std::to_string(announced) +
                           " bytes exceeds the limit of " + std::to_string(max_frame_bytes(conn));
  if (!it->second.ready) {
    reject(conn, 0, proto::LIMIT, what);
    return false;
  }
  reply(conn, rdv::leading_request_id(head), proto::LIMIT,
        "request refused by the node agent: " + what + "; the connection stays");
  return true;
}

void AgentCore::on_rank_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  auto it = locals_.find(conn);
  if (it == locals_.end()) return;
  proto::Request req;
  if (!req.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return reject(conn, 0, proto::PROTOCOL, "malformed request frame");
  Local& l = it->second;
  if (!l.ready) return handle_hello(conn, l, req);
  if (req.has_hello()) return reject(conn, req.id(), proto::PROTOCOL, "a second hello");
  if (link_ == Link::gone) return reject(conn, req.id(), proto::CONNECTION, end_reason_);
  heard_[l.rank];  // any frame shows the rank alive
  dispatch(conn, l.rank, req, now);
}

Result<void> AgentCore::check_hello(const Local& l, const proto::Hello& h) const {
  DP_TRY(rdv::check_said_version(
      rdv::protocol_range(), h.protocol_version(),
      {"this node's dp-nodeagent", "slurm-dp on this node"},
      {"the task's libdp", "the program's libdp (a copy of its own, or slurm-dp on this node)"}));
  if (h.role() != proto::ROLE_RANK)
    return make_error(Errc::unauthorized, "only the node's ranks may connect");
  const std::string proof =
      rdv::hello_proof(cfg_.secret, l.nonce, proto::ROLE_RANK, h.rank(), h.world_size(), h.host());
  if (!rdv::proof_matches(h.proof(), proof))
    return make_error(Errc::unauthorized, "bad proof (not this step's secret)");
  if (!ranks_.count(h.rank()))
    return make_error(Errc::unauthorized,
                      "rank " + std::to_string(h.rank()) + " is not a task of this node");
  if (h.world_size() != 0 && h.world_size() != cfg_.world_size)
    return make_error(Errc::invalid_argument, "WORLD_SIZE " + std::to_string(h.world_size()) +
                                                  " but the step has " +
                                                  std::to_string(cfg_.world_size));
  if (ranks_.at(h.rank()).conn != 0)
    return make_error(Errc::conflict, "rank " + std::to_string(h.rank()) + " is connected already");
  return {};
}

void AgentCore::handle_hello(ConnId conn, Local& l, const proto::Request& req) {
  if (!req.has_hello()) return reject(conn, req.id(), proto::UNAUTHORIZED, "hello first");
  if (auto ok = check_hello(l, req.hello()); !ok)
    return reject(conn, req.id(), rdv::to_wire(ok.error().code), ok.error().message);
  if (link_ == Link::gone) return reject(conn, req.id(), proto::CONNECTION, end_reason_);
  l.ready = true;
  l.rank = req.hello().rank();
  RankState& s = ranks_[l.rank];
  s = RankState{};  // a second dp::init in the same step starts afresh
  s.conn = conn;
  heard_[l.rank];
  reply(conn, req.id(), proto::OK);
  if (abort_) out_.to_rank(conn, *abort_);
}

void AgentCore::dispatch(ConnId conn, int rank, const proto::Request& req, Clock::time_point now) {
  switch (req.op_case()) {
    case proto::Request::kHeartbeat:
      if (req.heartbeat().has_progress()) heard_[rank] = req.heartbeat().progress();
      return;
    case proto::Request::kGet: return local_get(conn, req, now);
    case proto::Request::kBarrier: return local_barrier(conn, rank, req, now);
    case proto::Request::kGoodbye: ranks_[rank].goodbye = true; return forward(conn, rank, req);
    case proto::Request::kRankLost:
    case proto::Request::kStepSignal:
    case proto::Request::kStacksAnswer:
    case proto::Request::kRestartReady:
      return reply(conn, req.id(), proto::INVALID_ARGUMENT,
                   "RankLost, StepSignal, StacksAnswer and RestartReady are the agent's own "
                   "reports");
    case proto::Request::OP_NOT_SET:
      return reply(conn, req.id(), proto::INVALID_ARGUMENT, "request without an operation");
    default: return forward(conn, rank, req);
  }
}

void AgentCore::on_rank_disconnect(ConnId conn, Clock::time_point now) {
  auto it = locals_.find(conn);
  if (it == locals_.end()) return;
  const Local l = it->second;
  locals_.erase(it);
  if (!l.ready) return;
  RankState& s = ranks_[l.rank];
  if (s.conn != conn) return;
  s.conn = 0;
  if (s.goodbye || s.lost) return;
  if (s.wait_status) return report_lost(l.rank, s, now, "its connection to the node agent dropped");
  s.dropped_at = now;  // on_tick reports it when no exit status comes
}

void AgentCore::on_task_exit(int rank, int wait_status, Clock::time_point now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || restarting_) return;
  RankState& s = it->second;
  s.wait_status = wait_status;
  if (s.goodbye || s.lost) return;
  const bool failed = !(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  if (s.dropped_at || s.conn || failed)
    return report_lost(rank, s, now, "the task ended without a goodbye");
  // A task that never reached dp::init and exited 0 is no failure: it leaves
  // the step in the daemon's eyes too (slurmstepd may kill the agent soon after).
  s.goodbye = true;
  proto::Request bye;
  bye.mutable_goodbye()->set_rank(rank);
  upstream(std::move(bye), Upstream{Kind::plain, 0, 0, {}, {}});
}

void AgentCore::on_task_gone(int rank, const std::string& detail, Clock::time_point now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || abort_ || link_ == Link::gone) return;
  it->second.goodbye = false;  // a finished program's rank too: it could not run again
  report_lost(rank, it->second, now, detail, std::nullopt, std::nullopt, true);
}

void AgentCore::on_worker_exit(int rank, int worker_rank, int wait_status, Clock::time_point now) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || abort_) return;
  RankState& s = it->second;
  if (s.goodbye || s.lost || s.wait_status) return;
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) return;
  report_lost(rank, s, now, "its worker ended", worker_rank, wait_status);
}

// The status is the task's, or with worker_rank its failed worker's.
void AgentCore::report_lost(int rank, RankState& s, Clock::time_point now,
                            const std::string& detail, std::optional<int> worker_rank,
                            std::optional<int> worker_status, bool task_gone) {
  s.lost = true;
  s.dropped_at.reset();
  proto::Request req;
  auto* m = req.mutable_rank_lost();
  m->set_rank(rank);
  m->set_detail(detail);
  const std::optional<int> st = worker_rank ? worker_status : s.wait_status;
  if (worker_rank) m->set_worker_rank(*worker_rank);
  m->set_task_gone(task_gone);
  if (st && WIFEXITED(*st)) m->set_exit_code(WEXITSTATUS(*st));
  if (st && WIFSIGNALED(*st)) m->set_signal(WTERMSIG(*st));
  if (auto by = user_signal_cause(received_signal(now),
                                  m->has_signal() ? std::optional<int>(m->signal()) : std::nullopt))
    m->set_user_signal(*by);
  upstream(std::move(req), Upstream{Kind::plain, 0, 0, {}, {}});
}

// Slurm's signal reached this node (the server feeds them before the task
// exits that follow): the daemon hears it at once, so even the loss of a
// node that Slurm then kills is named as the user's.
void AgentCore::on_step_signal(int sig, Clock::time_point now) {
  signal_ = std::pair(sig, now);
  proto::Request req;
  req.mutable_step_signal()->set_signal(sig);
  notify(std::move(req));
}

uint64_t AgentCore::note_store_refusal(const std::string& line) {
  constexpr uint64_t kLinesPerNode = 8;  // the daemon keeps the step's first few
  proto::Request req;
  req.mutable_store_refused()->set_refused(++store_refused_);
  if (store_refused_ <= kLinesPerNode) req.mutable_store_refused()->set_line(line);
  notify(std::move(req));
  return store_refused_;
}

void AgentCore::notify(proto::Request req) {
  req.set_id(0);
  if (link_ == Link::ready) out_.to_daemon(req);
  else if (link_ != Link::gone) queued_.push_back(std::move(req));
}

std::optional<ReceivedSignal> AgentCore::received_signal(Clock::time_point now) const {
  if (!signal_) return std::nullopt;
  return ReceivedSignal{
      signal_->first, std::chrono::duration_cast<std::chrono::milliseconds>(now - signal_->second)};
}

// ---- time ----

void AgentCore::on_tick(Clock::time_point now) {
  if (link_ == Link::gone) return;
  if (pending_end_) {  // the survivors' read did not come back in time: end without it
    if (!pending_end_->deadline) pending_end_->deadline = now + kAtFailureWait;
    if (now >= *pending_end_->deadline) end_pending();
  }
  daemon_.woke(now);  // a late tick: the agent itself was stopped (a suspended job)
  watch_daemon(now);
  if (link_ == Link::gone) return;
  expire_hellos(now);
  expire_waiters(now);
  for (auto& [rank, s] : ranks_)
    if (s.dropped_at && now - *s.dropped_at >= cfg_.exit_status_grace)
      report_lost(rank, s, now, "its connection to the node agent dropped without a goodbye");
  if (now >= next_beat_) beat(now);
  if (now >= next_ping_) {
    next_ping_ = now + cfg_.ping_every;
    proto::Response keepalive;
    for (auto& [conn, l] : locals_)
      if (l.ready) out_.to_rank(conn, keepalive);
  }
}

std::string AgentCore::silence_text(Clock::time_point now) const {
  return "dp-rendezvousd at " + cfg_.daemon_addr + " sent nothing for " +
         ms_text(daemon_.silent(now)) +
         " although it pings every second: it or the host of srun is stopped, frozen or "
         "unreachable (the bound is the site's heartbeat_timeout)";
}

// Silence first puts the link in doubt (a new connection is tried), and at
// the site's bound ends the node's part of the step.
void AgentCore::watch_daemon(Clock::time_point now) {
  const auto silent = daemon_.silent(now);
  if (daemon_.over(now)) return on_daemon_lost(silence_text(now));
  // With spares the node gives up its place sooner: the daemon replaces a
  // node silent for spare_timeout, and only once fence_after has passed.
  if (cfg_.fence_after.count() > 0 && silent >= cfg_.fence_after)
    return on_daemon_lost(silence_text(now) +
                          "; the node's programs are killed (site key "
                          "fence_after): a spare may take its place");
  const auto doubt = daemon_.bounded()
                         ? std::min<Clock::duration>(cfg_.doubt_after, daemon_.limit() / 2)
                         : Clock::duration(cfg_.doubt_after);
  if (link_ == Link::ready && silent >= doubt)
    on_daemon_doubt("nothing heard for " + ms_text(silent), now);
}

// One heartbeat for the node: the ranks heard since the last one, and the
// tasks that never talk to slurm-dp (no libdp) but still run: the agent's own
// heartbeat is all that shows their node alive, so a frozen node falls silent.
void AgentCore::beat(Clock::time_point now) {
  next_beat_ = now + cfg_.heartbeat_every;
  if (link_ != Link::ready) return;
  for (const auto& [rank, s] : ranks_)
    if (s.conn == 0 && !s.goodbye && !s.lost && !s.wait_status && !s.dropped_at) heard_[rank];
  proto::Request req;
  auto* hb = req.mutable_heartbeat();
  for (auto& [rank, progress] : heard_) {
    auto* rp = hb->add_ranks();
    rp->set_rank(rank);
    if (progress) *rp->mutable_progress() = *progress;
  }
  heard_.clear();
  hb->set_store_strangers(store_strangers_);
  out_.add_samples(*hb);
  out_.to_daemon(req);
}

void AgentCore::expire_hellos(Clock::time_point now) {
  std::vector<ConnId> late;
  for (auto& [conn, l] : locals_)
    if (!l.ready && now - l.since >= cfg_.hello_timeout) late.push_back(conn);
  for (ConnId c : late) reject(c, 0, proto::TIMEOUT, "no hello in time");
}

}  // namespace dp::agent
