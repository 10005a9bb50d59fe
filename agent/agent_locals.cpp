// The node's local ranks: their hellos and requests, their connections
// dropped and their tasks' exits, reported to the daemon as ranks lost.
#include "agent_core.hpp"

#include <sys/wait.h>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "stacks_ask.hpp"

namespace dp::agent {

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

}  // namespace dp::agent
