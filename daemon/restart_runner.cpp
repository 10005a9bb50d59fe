#include "restart_runner.hpp"

#include <algorithm>

#include "dp/shown_value.hpp"

namespace dp::daemon {
namespace {

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

bool RestartRunner::instead(AbortCause& cause) {
  if (!step_.restarts || step_.abort) return false;
  std::optional<Setback> what = setback_of(cause);
  if (!what) return false;
  StepRestart& rs = *step_.restarts;
  const Clock::time_point now = cause.when == Clock::time_point{} ? Clock::now() : cause.when;
  if (!step_.cfg.limits.restart_programs) return launcher_loss(cause, *what, now);
  const bool stopped = rs.machine.stopped_phase();
  if (*what == Setback::program_failed && !stopped && cause.node >= 0) {
    what = failure_setback(rs.roster, rs.early[cause.node], rs.times.at_once(now));
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
  const bool further =
      rs.machine.phase() != RestartMachine::Phase::running && *what == Setback::node_lost;
  const RestartPlan plan = further ? plan_further_loss(rs.roster, cause.node)
                                   : plan_restart(rs.roster, *what, cause.node);
  switch (plan.verdict) {
    case RestartPlan::Verdict::end:
      cause.message += "; the step is not restarted: " + plan.why;
      return false;
    case RestartPlan::Verdict::none:
      rs.roster = plan.roster;
      step_.log("spare node " + cause.host + " lost; " + std::to_string(rs.roster.spares_left()) +
                " spare(s) left");
      step_.report.note_restarts(rs.lines, rs.roster.spares_left());
      return true;
    case RestartPlan::Verdict::restart:
      if (*what == Setback::node_lost) fence_node(cause, now);
      begin(cause, plan, further, now);
      return true;
  }
  return false;
}

// torchrun restarts its own workers, and its rendezvous gives a lost node's
// place to a launcher waiting there: a loss is counted and named, nothing is
// stopped. A launcher that fails gave up, unless the step's work was done
// (as many launchers finished as the world has nodes): then it was one of
// those waiting, which PyTorch before 2.3 ends with RendezvousClosedError.
bool RestartRunner::launcher_loss(AbortCause& cause, Setback what, Clock::time_point now) {
  StepRestart& rs = *step_.restarts;
  const int finished = step_.live.goodbye_count();
  if (what == Setback::program_failed) {
    if (finished < step_.cfg.world_size - step_.cfg.limits.spares || cause.rank < 0) return false;
    rs.gone.insert(cause.rank);
    step_.log(cause.message +
              " after the step's nodes finished: a launcher that waited in torchrun's "
              "rendezvous, no failure");
    return true;
  }
  const RestartPlan plan = plan_launcher_loss(rs.roster, cause.node, step_.cfg.limits.spares);
  if (plan.verdict == RestartPlan::Verdict::end)
    cause.message += "; the step is not restarted: " + plan.why;
  if (plan.verdict != RestartPlan::Verdict::restart)
    return plan.verdict == RestartPlan::Verdict::none;
  fence_node(cause, now);
  age_lost_launchers(cause, now);
  for (int r : node_rank_ranks(cause.node, rs.roster.tasks_per_node)) rs.gone.insert(r);
  finish_record(now);
  rs.roster = plan.roster;
  rs.record = RestartRecord{};
  rs.record.count = rs.roster.restarts;
  rs.record.max_restarts = rs.roster.max_restarts;
  rs.record.lost_host = cause.host;
  rs.record.why = short_why(cause, step_.live.silence_limit());
  rs.record.by_launcher = true;
  rs.record.spares_left = step_.cfg.limits.spares - rs.roster.lost();
  Clock::time_point loss_at = now;
  for (int r : node_rank_ranks(cause.node, rs.roster.tasks_per_node))
    loss_at = std::min(loss_at, step_.live.slot(r).last_heard);
  rs.times.open(loss_at, now);
  finish_record(now);
  return true;
}

void RestartRunner::age_lost_launchers(const AbortCause& cause, Clock::time_point now) {
  const auto aged = step_.restarts->launchers.age_node(cause.node, [&](const std::string& key) {
    return step_.store.find(proto::SPACE_TORCH, key);
  });
  for (const auto& a : aged) {
    if (!step_.store.put(proto::SPACE_TORCH, a.key, a.value)) continue;
    blocking_.key_changed(proto::SPACE_TORCH, a.key, now);
    std::string names;
    for (const auto& n : a.names) names += (names.empty() ? "" : ", ") + shown_value(n);
    const bool one = a.names.size() == 1;
    const std::string s = one ? "" : "s";
    step_.log("torchrun's rendezvous " + shown_value(a.key) + ": the heartbeat" + s +
              " of launcher" + s + " " + names + " on lost node " + shown_value(cause.host) +
              " aged, so the launchers left drop " + (one ? "it" : "them") +
              " at their next read instead of after the keep-alive");
  }
}

// A lost node's programs are known dead when its agent answers FENCE (its
// keepers saw every tree end), or once it was unheard for the site's
// fence_after, by when its agent killed them itself, plus a heartbeat (the
// agent may have heard the daemon up to one after the daemon last heard it)
// and a tick. A link that closed means its agent is gone: its keepers kill
// their trees as their own links close, within this reaction time.
constexpr auto kFenceMargin = std::chrono::seconds(2);
constexpr auto kKeeperReaction = std::chrono::seconds(1);

void RestartRunner::fence_node(const AbortCause& cause, Clock::time_point now) {
  const int node = cause.node;
  StepRestart& rs = *step_.restarts;
  RestartMachine::Fence f;
  f.host = cause.host;
  // When the node was last heard: its agent fenced itself fence_after later.
  Clock::time_point heard{};
  const int held = node >= 0 && node < rs.roster.nodes()
                       ? rs.roster.node_rank[static_cast<size_t>(node)]
                       : Roster::kLost;
  for (int r : node_rank_ranks(held, rs.roster.tasks_per_node))
    heard = std::max(heard, step_.live.slot(r).last_heard);
  if (heard == Clock::time_point{}) heard = now;
  f.dead_by = heard + step_.cfg.limits.fence + kFenceMargin;
  f.how = "unheard for " + ms_text(step_.cfg.limits.fence) +
          " (site key fence_after): its agent killed them";
  const ConnId conn = step_.peers.node_conn(node);
  if (conn == 0) {
    // Closed by the daemon (silence, a stop not done in time) proves nothing.
    if (cause.peer_closed && now + kKeeperReaction < f.dead_by) {
      f.dead_by = now + kKeeperReaction;
      f.how = "its agent's link closed";
    }
  } else {
    // No peer any more (nothing it says counts), but its link stays open
    // for the answer; a hello from it later is refused.
    effects_.forget_peer(conn, false);
    f.link = conn;
  }
  run(rs.machine.fence(node, std::move(f), now), now);
}

bool RestartRunner::fenced_frame(ConnId conn, std::string_view payload, Clock::time_point now) {
  if (!step_.restarts) return false;
  const int node = step_.restarts->machine.fenced_node(conn);
  if (node < 0) return false;
  proto::Request req;
  if (req.ParseFromArray(payload.data(), static_cast<int>(payload.size())) &&
      req.has_restart_ready() && req.restart_ready().phase() == proto::Restart::FENCE)
    run(step_.restarts->machine.fence_answered(node, now), now);
  return true;
}

bool RestartRunner::fenced_drop(ConnId conn, Clock::time_point now) {
  if (!step_.restarts) return false;
  const int node = step_.restarts->machine.fenced_node(conn);
  if (node < 0) return false;
  run(step_.restarts->machine.fence_link_closed(node, now, kKeeperReaction), now);
  return true;
}

void RestartRunner::run(RestartMachine::Commands commands, Clock::time_point now) {
  StepRestart& rs = *step_.restarts;
  for (const std::string& line : rs.machine.take_lines()) step_.log(line);
  for (auto& c : commands) {
    proto::Restart r;
    r.set_generation(c.generation);
    switch (c.kind) {
      case RestartMachine::Command::Kind::stop:
        r.set_phase(proto::Restart::STOP);
        if (const ConnId conn = step_.peers.node_conn(c.node))
          step_.out.send(conn, restart_push(r));
        break;
      case RestartMachine::Command::Kind::fence:
        r.set_phase(proto::Restart::FENCE);
        step_.out.send(c.link, restart_push(r));
        break;
      case RestartMachine::Command::Kind::close_link: step_.out.close(c.link); break;
      case RestartMachine::Command::Kind::start:
        if (!step_.abort) start_programs(now);
        break;
      case RestartMachine::Command::Kind::lose:
        if (const ConnId conn = step_.peers.node_conn(c.node))
          effects_.reject_and_close(conn, 0, proto::UNAVAILABLE, c.why);
        break;
      case RestartMachine::Command::Kind::running:
        rs.times.started(now);
        // The launchers' own rendezvous and restart are torchrun's, unseen here.
        if (!step_.cfg.limits.restart_programs) finish_record(now);
        break;
    }
  }
}

// STOP to every live node agent; the spares answer at once. A loss while the
// programs stop or start adds its spare to the same restart (a new
// generation, so late answers to the old one count for nothing).
void RestartRunner::begin(const AbortCause& cause, const RestartPlan& plan, bool further,
                          Clock::time_point now) {
  StepRestart& rs = *step_.restarts;
  if (!further) {
    finish_record(now);
    rs.record = RestartRecord{};
    rs.record.count = plan.roster.restarts;
    rs.record.max_restarts = plan.roster.max_restarts;
    rs.record.tasks_per_node = plan.roster.tasks_per_node;
    rs.record.why = short_why(cause, step_.live.silence_limit());
    // A lost node was last heard at most a heartbeat before it went.
    Clock::time_point loss_at = now;
    if (*setback_of(cause) == Setback::node_lost)
      for (int r : node_rank_ranks(plan.node_rank, plan.roster.tasks_per_node))
        loss_at = std::min(loss_at, step_.live.slot(r).last_heard);
    rs.times.open(loss_at, now);
  }
  if (*setback_of(cause) == Setback::node_lost) {
    // A program that failed first only felt this loss (rank 0's node lost,
    // and a peer's collective failed before its link's drop was heard).
    if (rs.record.lost_host.empty()) rs.record.why = short_why(cause, step_.live.silence_limit());
    rs.record.lost_host += (rs.record.lost_host.empty() ? "" : ", ") + cause.host;
  }
  if (plan.spare >= 0) {
    rs.record.spare_host +=
        (rs.record.spare_host.empty() ? "" : ", ") + step_.peers.node_host(plan.spare);
    rs.record.node_rank = plan.node_rank;
  }
  rs.roster = plan.roster;
  rs.record.spares_left = rs.roster.spares_left();
  rs.times.keep_open();
  run(rs.machine.begin(rs.live_nodes(step_.peers), now,
                       "restart " + std::to_string(rs.record.count) + ": " + cause.message),
      now);
}

// Every program stopped: the programs' keys and calls go, every rank is
// held by its node's agent (the spare's for the lost node's), START.
void RestartRunner::start_programs(Clock::time_point now) {
  StepRestart& rs = *step_.restarts;
  // Never a START to a world one of whose nodes cannot come: its ranks
  // would be waited for until the rendezvous' timeout.
  if (auto lost = rs.unheard_node_loss(step_.peers, step_.live, step_.nodes_left, now)) {
    step_.log(lost->message);
    effects_.abort_job(std::move(*lost));  // a further loss: a spare's restart, or the step's end
    return;
  }
  rs.times.stopped(now);
  step_.store.clear_programs(kStepPortsKey);
  for (uint64_t wid : step_.calls.ids()) step_.calls.take(wid);  // barriers close with their calls
  step_.report.on_restart();
  const int t = rs.roster.tasks_per_node;
  std::set<int> starting;
  for (auto& [conn, p] : step_.peers) {
    if (p.state != PeerState::ready || p.role != proto::ROLE_NODE || p.node < 0 ||
        p.node >= rs.roster.nodes())
      continue;
    const int nr = rs.roster.node_rank[static_cast<size_t>(p.node)];
    if (nr == Roster::kLost) continue;
    p.node_ranks = node_rank_ranks(nr, t);
    for (int r : p.node_ranks) {
      step_.live.restarted(r, conn, p.host, now);
      step_.report.on_hello(r, p.host, now);
    }
    if (nr < 0) continue;  // it stays a spare
    step_.out.send(conn, restart_push(rs.start_push(nr)));
    starting.insert(p.node);
  }
  run(rs.machine.starting(starting, now), now);
}

void RestartRunner::ready(const Call& c, const proto::RestartReady& m) {
  if (!step_.restarts || c.peer.role != proto::ROLE_NODE || step_.abort) return;
  RestartMachine& machine = step_.restarts->machine;
  if (m.phase() == proto::Restart::STOP)
    run(machine.stopped(c.peer.node, m.generation(), c.now), c.now);
  else if (m.phase() == proto::Restart::START)
    run(machine.started(c.peer.node, m.generation(), c.now), c.now);
}

void RestartRunner::node_left(const Peer& p, Clock::time_point now) {
  if (!step_.restarts || step_.abort || p.role != proto::ROLE_NODE) return;
  run(step_.restarts->machine.left(p.node, now), now);
}

void RestartRunner::finish_record(Clock::time_point now) {
  StepRestart& rs = *step_.restarts;
  const auto phases = rs.times.close(now, step_.report.resumed().stepped);
  if (!phases) return;
  RestartRecord& r = rs.record;
  std::copy(phases->begin(), phases->end(), r.phase_ms);
  const std::string line = restart_line(r);
  rs.lines.push_back(line);
  step_.report.note_restarts(rs.lines, rs.roster.spares_left());
  step_.log(line);
  step_.out.notice("slurm-dp: step " + step_.cfg.job_id + "." + step_.cfg.step_id + ": " + line);
}

void RestartRunner::watch(Clock::time_point now) {
  if (!step_.restarts || step_.abort) return;
  StepRestart& rs = *step_.restarts;
  // An agent that left with no drop heard (its goodbye, a fence) answers nothing.
  for (int node : std::set<int>(rs.machine.waiting()))
    if (step_.peers.node_conn(node) == 0) run(rs.machine.left(node, now), now);
  run(rs.machine.tick(now), now);
  if (step_.abort || rs.machine.phase() != RestartMachine::Phase::running) return;
  if (rs.times.settled(now)) rs.early.clear();
  const auto resumed = step_.report.resumed();
  if (resumed.initialized) rs.times.initialized(now);
  // Without libdp's counters there is no first step to wait for.
  if (rs.times.due(now, resumed.stepped, resumed.reported)) finish_record(now);
  if (!rs.done_pushed &&
      step_.live.goodbye_count() + static_cast<int>(rs.gone.size()) >= step_.cfg.world_size) {
    rs.done_pushed = true;
    finish_record(now);
    const proto::Response done = restart_push(rs.done_push());
    for (const auto& [conn, p] : step_.peers)
      if (p.state == PeerState::ready && p.role == proto::ROLE_NODE) step_.out.send(conn, done);
  }
  if (rs.done_pushed && !rs.lost_ended && rs.roster.lost() > 0 && step_.count.nodes == 0) {
    rs.lost_ended = true;
    if (step_.cfg.limits.on_failure == OnFailure::end)
      step_.out.end_step_in_slurm(rs.lost_nodes_done());
  }
}

}  // namespace dp::daemon
