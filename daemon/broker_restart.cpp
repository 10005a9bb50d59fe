// The step restarts in place instead of ending (--dp-spares,
// --dp-max-restarts). The core decides (spares.hpp: which spare takes which
// node rank, whether the budget allows it); the daemon carries it out through
// the node agents: STOP every program, wait for every node, clear the
// programs' keys and calls, START them again (a spare in a lost node's
// place), time the phases, and once every rank is done release the spares
// and end a lost node's tasks in Slurm, which srun would otherwise wait for.
#include <algorithm>
#include <cstdio>

#include "broker.hpp"

namespace dp::daemon {
namespace {

// After the rendezvous, how long a step whose ranks report no counters
// (no libdp) is given before its restart's line goes out without a first step.
constexpr std::chrono::seconds kFirstStepWait{2};

int64_t ms_between(Clock::time_point from, Clock::time_point to) {
  if (from == Clock::time_point{} || to == Clock::time_point{}) return -1;
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count());
}

// What a failure means for a step that may restart; none: it ends the step.
std::optional<Setback> setback_of(const AbortCause& c) {
  switch (c.how) {
    case AbortCause::How::rank_lost:
    case AbortCause::How::silence: return Setback::program_failed;
    case AbortCause::How::node_lost:
    case AbortCause::How::node_silent:
    case AbortCause::How::refused: return Setback::node_lost;
    case AbortCause::How::lost_connection:
    case AbortCause::How::explicit_abort:
    case AbortCause::How::hang:
    case AbortCause::How::user_signal: return std::nullopt;
  }
  return std::nullopt;
}

// How the loss showed, short: the restart's line names the node already.
std::string short_why(const AbortCause& c, std::chrono::milliseconds silence) {
  switch (c.how) {
    case AbortCause::How::node_lost:  // a task that ended for good names itself
      return c.message.rfind("rank ", 0) == 0
                 ? c.message
                 : "node_lost: its agent's link to srun's host dropped";
    case AbortCause::How::node_silent:
      return "node_silent: no heartbeat for " + ms_text(silence) + ", frozen or cut off";
    case AbortCause::How::refused: return "its agent was disconnected";
    case AbortCause::How::lost_connection:
    case AbortCause::How::silence:
    case AbortCause::How::explicit_abort:
    case AbortCause::How::hang:
    case AbortCause::How::rank_lost:
    case AbortCause::How::user_signal: return c.message;
  }
  return c.message;
}

}  // namespace

ConnId Broker::node_conn(int node, ConnId except) const {
  for (const auto& [conn, p] : peers_)
    if (conn != except && p.state == PeerState::ready && p.role == proto::ROLE_NODE &&
        p.node == node)
      return conn;
  return 0;
}

std::string Broker::node_host(int node) const {
  const ConnId c = node_conn(node);
  return c == 0 ? "node " + std::to_string(node) : peers_.at(c).host;
}

void Broker::push_restart(ConnId conn, const proto::Restart& r) {
  proto::Response push;  // id 0: a push
  *push.mutable_restart() = r;
  out_.send(conn, push);
}

bool Broker::restart_instead(AbortCause& cause) {
  if (!restarts_ || abort_) return false;
  std::optional<Setback> what = setback_of(cause);
  if (!what) return false;
  Restarts& rs = *restarts_;
  const Clock::time_point now = cause.when == Clock::time_point{} ? Clock::now() : cause.when;
  if (!cfg_.limits.restart_programs) return launcher_loss(cause, *what, now);
  const bool stopped =
      rs.phase == Restarts::Phase::stopping || rs.phase == Restarts::Phase::fencing;
  if (*what == Setback::program_failed && !stopped && cause.node >= 0) {
    const bool at_once = !rs.met_at || now - *rs.met_at < std::chrono::milliseconds(kAtOnceMs);
    what = failure_setback(rs.roster, rs.early[cause.node], at_once);
    if (*what == Setback::node_lost) {
      cause.how = AbortCause::How::node_lost;
      cause.message = "rank " + std::to_string(cause.rank) + " (host " + cause.host +
                      ") failed at once again (" + cause.message +
                      "): its program failed before it could step twice in a row on node " +
                      cause.host + ", which is retired for a spare";
    }
  }
  // While programs stop, one that fails is the stop's own doing; one that
  // fails as they start again is a restart of its own. A node lost while
  // either happens joins the restart under way.
  if (stopped && *what == Setback::program_failed) return true;
  const bool further = rs.phase != Restarts::Phase::running && *what == Setback::node_lost;
  const RestartPlan plan = further ? plan_further_loss(rs.roster, cause.node)
                                   : plan_restart(rs.roster, *what, cause.node);
  switch (plan.verdict) {
    case RestartPlan::Verdict::end:
      cause.message += "; the step is not restarted: " + plan.why;
      return false;
    case RestartPlan::Verdict::none:
      rs.roster = plan.roster;
      std::fprintf(stderr, "dp-rendezvousd: job %s step %s: spare node %s lost; %d spare(s) left\n",
                   cfg_.job_id.c_str(), cfg_.step_id.c_str(), cause.host.c_str(),
                   rs.roster.spares_left());
      report_.note_restarts(rs.lines, rs.roster.spares_left());
      return true;
    case RestartPlan::Verdict::restart:
      if (*what == Setback::node_lost) fence_node(cause, now);
      begin_restart(cause, plan, further, now);
      return true;
  }
  return false;
}

// torchrun restarts its own workers, and its rendezvous gives a lost node's
// place to a launcher waiting there: a loss is counted and named, nothing is
// stopped. A launcher that fails gave up, unless the step's work was done
// (as many launchers finished as the world has nodes): then it was one of
// those waiting, which PyTorch before 2.3 ends with RendezvousClosedError.
bool Broker::launcher_loss(AbortCause& cause, Setback what, Clock::time_point now) {
  Restarts& rs = *restarts_;
  const int finished = live_.goodbye_count();
  if (what == Setback::program_failed) {
    if (finished < cfg_.world_size - cfg_.limits.spares || cause.rank < 0) return false;
    rs.gone.insert(cause.rank);
    std::fprintf(stderr,
                 "dp-rendezvousd: job %s step %s: %s after the step's nodes finished: a launcher "
                 "that waited in torchrun's rendezvous, no failure\n",
                 cfg_.job_id.c_str(), cfg_.step_id.c_str(), cause.message.c_str());
    return true;
  }
  const RestartPlan plan = plan_launcher_loss(rs.roster, cause.node, cfg_.limits.spares);
  if (plan.verdict == RestartPlan::Verdict::end)
    cause.message += "; the step is not restarted: " + plan.why;
  if (plan.verdict != RestartPlan::Verdict::restart)
    return plan.verdict == RestartPlan::Verdict::none;
  fence_node(cause, now);
  for (int r : node_rank_ranks(cause.node, rs.roster.tasks_per_node)) rs.gone.insert(r);
  if (rs.record_open) finish_record(now);
  rs.roster = plan.roster;
  rs.record = RestartRecord{};
  rs.record.count = rs.roster.restarts;
  rs.record.max_restarts = rs.roster.max_restarts;
  rs.record.lost_host = cause.host;
  rs.record.why = short_why(cause, live_.silence_limit());
  rs.record.by_launcher = true;
  rs.record.spares_left = cfg_.limits.spares - rs.roster.lost();
  rs.loss_at = rs.decided_at = now;
  for (int r : node_rank_ranks(cause.node, rs.roster.tasks_per_node))
    rs.loss_at = std::min(rs.loss_at, live_.slot(r).last_heard);
  rs.stopped_at = rs.started_at = rs.rendezvous_at = Clock::time_point{};
  rs.record_open = true;
  finish_record(now);
  return true;
}

// A lost node's programs are known dead when its agent answers FENCE (its
// keepers saw every tree end), or once it was unheard for the site's
// fence_after, by when its agent killed them itself, plus a heartbeat (the
// agent may have heard the daemon up to one after the daemon last heard it)
// and a tick. A link that closed means its agent is gone: its keepers kill
// their trees as their own links close, within this reaction time.
constexpr auto kFenceMargin = std::chrono::seconds(2);
constexpr auto kKeeperReaction = std::chrono::seconds(1);

void Broker::fence_node(const AbortCause& cause, Clock::time_point now) {
  const int node = cause.node;
  Restarts& rs = *restarts_;
  Restarts::Fence f;
  f.host = cause.host;
  // When the node was last heard: its agent fenced itself fence_after later.
  Clock::time_point heard{};
  const int held = node >= 0 && node < rs.roster.nodes()
                       ? rs.roster.node_rank[static_cast<size_t>(node)]
                       : Roster::kLost;
  for (int r : node_rank_ranks(held, rs.roster.tasks_per_node))
    heard = std::max(heard, live_.slot(r).last_heard);
  if (heard == Clock::time_point{}) heard = now;
  f.dead_by = heard + cfg_.limits.fence + kFenceMargin;
  f.how = "unheard for " + ms_text(cfg_.limits.fence) +
          " (site key fence_after): its agent killed them";
  const ConnId conn = node_conn(node);
  if (conn == 0) {
    // Closed by the daemon (silence, a stop not done in time) proves nothing.
    if (cause.peer_closed && now + kKeeperReaction < f.dead_by) {
      f.dead_by = now + kKeeperReaction;
      f.how = "its agent's link closed";
    }
  } else {
    proto::Restart fence;
    fence.set_phase(proto::Restart::FENCE);
    fence.set_generation(rs.generation + 1);
    push_restart(conn, fence);
    // No peer any more (nothing it says counts), but its link stays open
    // for the answer; a hello from it later is refused.
    forget_peer(conn);
    f.conn = conn;
  }
  rs.fences[node] = f;
  settle_fences(now);
}

bool Broker::fenced_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  if (!restarts_) return false;
  for (auto& [node, f] : restarts_->fences) {
    if (f.conn != conn) continue;
    proto::Request req;
    if (req.ParseFromArray(payload.data(), static_cast<int>(payload.size())) &&
        req.has_restart_ready() && req.restart_ready().phase() == proto::Restart::FENCE) {
      f.dead_by = now;
      f.how = "its agent said so";
      settle_fences(now);
    }
    return true;
  }
  return false;
}

bool Broker::fenced_drop(ConnId conn, Clock::time_point now) {
  if (!restarts_) return false;
  for (auto& [node, f] : restarts_->fences) {
    if (f.conn != conn) continue;
    f.conn = 0;
    if (now + kKeeperReaction < f.dead_by) {
      f.dead_by = now + kKeeperReaction;
      f.how = "its agent's link closed";
    }
    return true;
  }
  return false;
}

void Broker::settle_fences(Clock::time_point now) {
  Restarts& rs = *restarts_;
  for (auto it = rs.fences.begin(); it != rs.fences.end();) {
    if (now < it->second.dead_by) {
      ++it;
      continue;
    }
    if (it->second.conn != 0) out_.close(it->second.conn);
    std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s's programs are dead: %s\n",
                 cfg_.job_id.c_str(), cfg_.step_id.c_str(), it->second.host.c_str(),
                 it->second.how.c_str());
    it = rs.fences.erase(it);
  }
  if (rs.phase == Restarts::Phase::fencing && rs.fences.empty() && !abort_) start_programs(now);
}

// STOP to every live node agent; the spares answer at once. A loss while the
// programs stop or start adds its spare to the same restart (a new
// generation, so late answers to the old one count for nothing).
void Broker::begin_restart(const AbortCause& cause, const RestartPlan& plan, bool further,
                           Clock::time_point now) {
  Restarts& rs = *restarts_;
  if (!further) {
    if (rs.record_open) finish_record(now);
    rs.record = RestartRecord{};
    rs.record.count = plan.roster.restarts;
    rs.record.max_restarts = plan.roster.max_restarts;
    rs.record.tasks_per_node = plan.roster.tasks_per_node;
    rs.record.why = short_why(cause, live_.silence_limit());
    rs.decided_at = now;
    // A lost node was last heard at most a heartbeat before it went.
    rs.loss_at = now;
    if (*setback_of(cause) == Setback::node_lost)
      for (int r : node_rank_ranks(plan.node_rank, plan.roster.tasks_per_node))
        rs.loss_at = std::min(rs.loss_at, live_.slot(r).last_heard);
    rs.stopped_at = rs.started_at = rs.rendezvous_at = Clock::time_point{};
  }
  if (*setback_of(cause) == Setback::node_lost) {
    // A program that failed first only felt this loss (rank 0's node lost,
    // and a peer's collective failed before its link's drop was heard).
    if (rs.record.lost_host.empty()) rs.record.why = short_why(cause, live_.silence_limit());
    rs.record.lost_host += (rs.record.lost_host.empty() ? "" : ", ") + cause.host;
  }
  if (plan.spare >= 0) {
    rs.record.spare_host += (rs.record.spare_host.empty() ? "" : ", ") + node_host(plan.spare);
    rs.record.node_rank = plan.node_rank;
  }
  rs.roster = plan.roster;
  rs.record.spares_left = rs.roster.spares_left();
  rs.record_open = true;
  ++rs.generation;
  restart_phase(Restarts::Phase::stopping,
                "restart " + std::to_string(rs.record.count) + ": " + cause.message);
  proto::Restart stop;
  stop.set_phase(proto::Restart::STOP);
  stop.set_generation(rs.generation);
  rs.waiting.clear();
  for (const auto& [conn, p] : peers_)
    if (p.state == PeerState::ready && p.role == proto::ROLE_NODE && p.node >= 0 &&
        p.node < rs.roster.nodes() &&
        rs.roster.node_rank[static_cast<size_t>(p.node)] != Roster::kLost)
      rs.waiting.insert(conn);
  for (ConnId conn : std::set<ConnId>(rs.waiting)) push_restart(conn, stop);
  rs.deadline = now + cfg_.limits.restart_stop;
  if (rs.waiting.empty()) start_programs(now);
}

// Every program stopped: the programs' keys and calls go, every rank is
// held by its node's agent (the spare's for the lost node's), START.
void Broker::start_programs(Clock::time_point now) {
  Restarts& rs = *restarts_;
  // Never a START while a lost node's programs may still run (a spare
  // beside them: two generations, two writers of a checkpoint).
  if (!rs.fences.empty()) {
    std::string hosts;
    for (const auto& [node, f] : rs.fences) hosts += (hosts.empty() ? "" : ", ") + f.host;
    return restart_phase(Restarts::Phase::fencing,
                         "every live node stopped; waiting for " + hosts + "'s programs' end");
  }
  // Never a START to a world one of whose nodes cannot come: its ranks
  // would be waited for until the rendezvous' timeout.
  if (lose_unheard_node(now)) return;
  rs.stopped_at = now;
  store_.clear_programs(kStepPortsKey);
  std::vector<uint64_t> ids;
  for (const auto& [wid, w] : waiters_) ids.push_back(wid);
  for (uint64_t wid : ids) drop_waiter(wid);
  barriers_.clear();
  report_.on_restart();
  rs.torch_inits = 0;
  rs.met_at.reset();
  restart_phase(Restarts::Phase::starting, "every program stopped");
  rs.waiting.clear();
  proto::Restart start;
  start.set_phase(proto::Restart::START);
  start.set_generation(rs.generation);
  start.set_restart_count(static_cast<uint32_t>(rs.roster.restarts));
  const int t = rs.roster.tasks_per_node;
  for (auto& [conn, p] : peers_) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE || p.node < 0 ||
        p.node >= rs.roster.nodes())
      continue;
    const int nr = rs.roster.node_rank[static_cast<size_t>(p.node)];
    if (nr == Roster::kLost) continue;
    p.node_ranks = node_rank_ranks(nr, t);
    for (int r : p.node_ranks) {
      live_.restarted(r, conn, p.host, now);
      report_.on_hello(r, p.host, now);
    }
    if (nr < 0) continue;  // it stays a spare
    start.set_node_rank(nr);
    start.clear_node_ranks();
    for (int r : p.node_ranks) start.add_node_ranks(r);
    rs.waiting.insert(conn);
  }
  for (ConnId conn : rs.waiting) {
    start.set_node_rank(rs.roster.node_rank[static_cast<size_t>(peers_.at(conn).node)]);
    start.clear_node_ranks();
    for (int r : peers_.at(conn).node_ranks) start.add_node_ranks(r);
    push_restart(conn, start);
  }
  rs.deadline = now + cfg_.limits.restart_stop;
}

bool Broker::lose_unheard_node(Clock::time_point now) {
  const Restarts& rs = *restarts_;
  for (int node = 0; node < rs.roster.nodes(); ++node) {
    if (rs.roster.node_rank[static_cast<size_t>(node)] < 0 || node_conn(node) != 0) continue;
    AbortCause lost;
    lost.how = AbortCause::How::node_lost;
    lost.node = node;
    lost.when = now;
    lost.peer_closed = nodes_left_.count(node) > 0;
    const auto ranks =
        node_rank_ranks(rs.roster.node_rank[static_cast<size_t>(node)], rs.roster.tasks_per_node);
    lost.rank = ranks.empty() ? -1 : ranks.front();
    // Its ranks' slots keep the host its agent last named in its hello.
    lost.host = ranks.empty() || live_.slot(ranks.front()).host.empty()
                    ? "node " + std::to_string(node)
                    : live_.slot(ranks.front()).host;
    lost.message = "the node agent on host " + lost.host +
                   " left without its loss being heard, and its ranks cannot start again";
    std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg_.job_id.c_str(),
                 cfg_.step_id.c_str(), lost.message.c_str());
    abort_job(std::move(lost));  // a further loss: a spare's restart, or the step's end
    return true;
  }
  return false;
}

namespace {
template <typename Phase>
const char* phase_name(Phase p) {
  constexpr const char* kNames[] = {"running", "stopping", "fencing", "starting"};
  const auto i = static_cast<size_t>(p);
  return i < std::size(kNames) ? kNames[i] : "?";
}
}  // namespace

// The only place the restart's phase changes: one line each (srun
// --dp-verbose shows the daemon's stderr).
void Broker::restart_phase(Restarts::Phase to, const std::string& why) {
  Restarts& rs = *restarts_;
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: restart generation %llu: %s -> %s (%s)\n",
               cfg_.job_id.c_str(), cfg_.step_id.c_str(),
               static_cast<unsigned long long>(rs.generation), phase_name(rs.phase), phase_name(to),
               why.c_str());
  rs.phase = to;
}

void Broker::op_restart_ready(const Call& c, const proto::RestartReady& m) {
  if (!restarts_ || c.peer.role != proto::ROLE_NODE) return;
  Restarts& rs = *restarts_;
  const bool stop = m.phase() == proto::Restart::STOP && rs.phase == Restarts::Phase::stopping;
  const bool start = m.phase() == proto::Restart::START && rs.phase == Restarts::Phase::starting;
  if (m.generation() != rs.generation || !(stop || start)) return;  // a late answer
  restart_answered(c.conn, c.now);
}

void Broker::restart_answered(ConnId conn, Clock::time_point now) {
  Restarts& rs = *restarts_;
  if (rs.waiting.erase(conn) == 0 || !rs.waiting.empty() || abort_) return;
  restart_phase_done(now);
}

void Broker::restart_phase_done(Clock::time_point now) {
  Restarts& rs = *restarts_;
  if (rs.phase == Restarts::Phase::stopping) return start_programs(now);
  if (rs.phase != Restarts::Phase::starting) return;
  restart_phase(Restarts::Phase::running, "every node started its programs");
  rs.started_at = now;
  // The launchers' own rendezvous and restart are torchrun's, unseen here.
  if (!cfg_.limits.restart_programs) finish_record(now);
}

void Broker::note_torch_init(Clock::time_point now) {
  if (!restarts_ || restarts_->phase == Restarts::Phase::stopping ||
      restarts_->phase == Restarts::Phase::fencing)
    return;
  Restarts& rs = *restarts_;
  if (++rs.torch_inits < cfg_.world_size) return;
  note_met(now);
  if (rs.record_open && rs.rendezvous_at == Clock::time_point{}) rs.rendezvous_at = now;
}

// This start's programs met: failures from kAtOnceMs on are no node's fault.
void Broker::note_met(Clock::time_point now) {
  Restarts& rs = *restarts_;
  if (rs.met_at) return;
  rs.met_at = now;
}

void Broker::finish_record(Clock::time_point now) {
  Restarts& rs = *restarts_;
  if (!rs.record_open) return;
  rs.record_open = false;
  RestartRecord& r = rs.record;
  r.phase_ms[0] = ms_between(rs.loss_at, rs.decided_at);
  r.phase_ms[1] = ms_between(rs.decided_at, rs.stopped_at);
  r.phase_ms[2] = ms_between(rs.stopped_at, rs.started_at);
  const bool started = rs.started_at != Clock::time_point{};
  r.phase_ms[3] = ms_between(started ? rs.started_at : rs.stopped_at, rs.rendezvous_at);
  const auto resumed = report_.resumed();
  r.phase_ms[4] = resumed.stepped && rs.rendezvous_at != Clock::time_point{}
                      ? ms_between(rs.rendezvous_at, now)
                      : -1;
  const std::string line = restart_line(r);
  rs.lines.push_back(line);
  report_.note_restarts(rs.lines, rs.roster.spares_left());
  std::fprintf(stderr, "dp-rendezvousd: job %s step %s: %s\n", cfg_.job_id.c_str(),
               cfg_.step_id.c_str(), line.c_str());
  out_.notice("slurm-dp: step " + cfg_.job_id + "." + cfg_.step_id + ": " + line);
}

void Broker::watch_restarts(Clock::time_point now) {
  if (!restarts_ || abort_) return;
  Restarts& rs = *restarts_;
  settle_fences(now);
  if (rs.phase == Restarts::Phase::fencing) return;
  if (rs.phase != Restarts::Phase::running) {
    // An agent that left with no drop heard (its goodbye, a fence) answers nothing.
    const size_t due = rs.waiting.size();
    std::erase_if(rs.waiting, [&](ConnId c) { return peers_.count(c) == 0; });
    if (due > 0 && rs.waiting.empty()) return restart_phase_done(now);
    if (now < rs.deadline) return;
    // A node agent that neither stopped nor started its programs in time is lost.
    const std::string what = rs.phase == Restarts::Phase::stopping ? "stop" : "start";
    for (ConnId conn : std::set<ConnId>(rs.waiting))
      if (peers_.count(conn))
        reject_and_close(conn, 0, proto::UNAVAILABLE,
                         "its node agent did not " + what + " its programs within " +
                             ms_text(cfg_.limits.restart_stop) + " of the restart");
    return;
  }
  if (rs.met_at && now - *rs.met_at >= std::chrono::milliseconds(kAtOnceMs)) rs.early.clear();
  if (report_.resumed().initialized) note_met(now);
  if (rs.record_open) {
    const auto resumed = report_.resumed();
    if (resumed.initialized && rs.rendezvous_at == Clock::time_point{}) rs.rendezvous_at = now;
    const bool met = rs.rendezvous_at != Clock::time_point{};
    // Without libdp's counters there is no first step to wait for.
    if (resumed.stepped || (met && !resumed.reported && now - rs.rendezvous_at >= kFirstStepWait) ||
        now - rs.started_at >= std::chrono::seconds(60))
      finish_record(now);
  }
  if (!rs.done_pushed &&
      live_.goodbye_count() + static_cast<int>(rs.gone.size()) >= cfg_.world_size) {
    rs.done_pushed = true;
    finish_record(now);
    proto::Restart done;
    done.set_phase(proto::Restart::DONE);
    done.set_generation(rs.generation);
    for (const auto& [conn, p] : peers_)
      if (p.state == PeerState::ready && p.role == proto::ROLE_NODE) push_restart(conn, done);
  }
  if (rs.done_pushed && !rs.lost_ended && rs.roster.lost() > 0 && nodes_ == 0) end_lost_nodes();
}

void Broker::end_lost_nodes() {
  Restarts& rs = *restarts_;
  rs.lost_ended = true;
  if (cfg_.limits.on_failure != OnFailure::end) return;
  AbortCause done;
  done.how = AbortCause::How::explicit_abort;
  done.message = "the step completed after " + std::to_string(rs.roster.restarts) +
                 " restart(s); " + std::to_string(rs.roster.lost()) +
                 " lost node(s) still hold tasks in Slurm's eyes";
  out_.end_step_in_slurm(done);
}

// A node agent that held no ranks left: a spare (one spare fewer), or a
// spare given a lost node's place that had not started it yet (its loss
// then needs another spare, or ends the step).
void Broker::node_gone(const Peer& p) {
  if (!restarts_ || p.role != proto::ROLE_NODE || p.node < 0 || p.node >= restarts_->roster.nodes())
    return;
  Restarts& rs = *restarts_;
  const int held = rs.roster.node_rank[static_cast<size_t>(p.node)];
  if (held == Roster::kLost || rs.done_pushed) return;
  AbortCause lost;
  lost.how = AbortCause::How::node_lost;
  lost.node = p.node;
  lost.host = p.host;
  lost.peer_closed = true;  // its link's end, heard
  const auto ranks = node_rank_ranks(held, rs.roster.tasks_per_node);
  lost.rank = ranks.empty() ? -1 : ranks.front();
  lost.message =
      "the node agent on host " + p.host +
      (held < 0 ? " (a spare)" : " (the spare taking node rank " + std::to_string(held) + ")") +
      " lost its connection to the rendezvous daemon";
  abort_job(std::move(lost));
}

}  // namespace dp::daemon
