// The node agent's one link to the step's daemon: hello, its pushes (abort,
// restart, fence, stacks), doubt and a new link, the requests sent upstream.
#include "agent_core.hpp"

#include <algorithm>
#include <iterator>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "node_hello.hpp"
#include "stacks_ask.hpp"
#include "step_ports_value.hpp"

namespace dp::agent {

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
    folds_.drop_calls();
    for (auto it = pending_.begin(); it != pending_.end();)
      it = it->second.conn != 0 ? pending_.erase(it) : std::next(it);
  } else if (r.phase() == proto::Restart::START) {
    restarting_ = false;
    cfg_.node_ranks.assign(r.node_ranks().begin(), r.node_ranks().end());
    ranks_.clear();
    for (int32_t rank : cfg_.node_ranks) ranks_[rank];
    heard_.clear();
    folds_.drop_cache();
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

}  // namespace dp::agent
