// AgentServer's task keepers, in a step that restarts in place (--dp-spares,
// --dp-max-restarts): each task of the node is a keeper of its program
// (spank/task_keeper.hpp) that says here when the program starts and ends,
// and starts, stops or releases it when told (keeper_contract.hpp). Only the
// node's own tasks speak: the job's uid, a pid root named as a task.
#include <event2/event.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "agent_server.hpp"
#include "dp/unix_socket.hpp"

namespace dp::agent {

void AgentServer::admit_keeper(service::UniqueFd fd) {
  auto cred = peer_cred(fd.get());
  if (!cred || cred->uid != getuid()) return;
  auto k = service::open_conn<KeeperConn, &AgentServer::read_keeper>(*this, base_.get(),
                                                                     std::move(fd), next_id_++);
  if (!k) return;
  k->pid = cred->pid;
  keepers_.emplace(k->id, std::move(k));
}

// The global rank local task `local` holds now; -1 on a spare.
int AgentServer::keeper_rank(int local) const {
  const auto& ranks = core_.node_ranks();
  return local >= 0 && static_cast<size_t>(local) < ranks.size() ? ranks[static_cast<size_t>(local)]
                                                                 : -1;
}

void AgentServer::send_keeper(KeeperConn& k, const KeeperLine& l) {
  const std::string line = format_keeper_line(l);
  // A line is tiny and a keeper reads at once: a full buffer means it is gone.
  (void)!::send(k.fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void AgentServer::read_keeper(KeeperConn& k) {
  char buf[512];
  const uint64_t id = k.id;
  const ssize_t n = ::recv(k.fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return keeper_gone(id, "its task (the program's keeper) ended");
  k.in.append(buf, static_cast<size_t>(n));
  for (size_t nl; keepers_.count(id) && (nl = k.in.find('\n')) != std::string::npos;) {
    const auto line = parse_keeper_line(std::string_view(k.in).substr(0, nl));
    k.in.erase(0, nl + 1);
    if (!line) {
      std::fprintf(stderr,
                   "dp-nodeagent: job %u step %u node %s: a task keeper said no known line\n",
                   settings_.job, settings_.step, settings_.host.c_str());
      return keeper_gone(id, "its task's keeper said no known line");
    }
    keeper_line(k, *line);
  }
  if (keepers_.count(id) && k.in.size() > kMaxKeeperLine)
    keeper_gone(id, "its keeper's line was too long");
}

// `keeper L PID`: root named PID as local task L at its fork, before the
// task could run (slurmstepd's task_post_fork), so its line is read by now.
bool AgentServer::identify_keeper(KeeperConn& k, const KeeperLine& l) {
  // What root wrote so far (stdin blocks: read only while it has bytes).
  for (pollfd p{STDIN_FILENO, POLLIN, 0}; ::poll(&p, 1, 0) > 0 && !keeper_tasks_.count(int(l.a));
       p.revents = 0) {
    if (p.revents & (POLLHUP | POLLERR) && !(p.revents & POLLIN)) break;
    read_control();
  }
  const auto it = keeper_tasks_.find(static_cast<int>(l.a));
  if (l.b != k.pid || it == keeper_tasks_.end() || it->second.pid != k.pid) return false;
  k.local = static_cast<int>(l.a);
  // Its first order, now: the step's latest (a keeper that comes late starts
  // as the others run now, with today's restart count), else the start as
  // the node rank the node holds; a spare's keeper waits for a START.
  if (released_) {
    send_keeper(k, {KeeperLine::Kind::exit});
  } else if (restart_) {
    tell_keeper(k, *restart_);
  } else if (!settings_.ranks.empty() && !settings_.task_ids.empty()) {
    const auto per_node = static_cast<int32_t>(settings_.task_ids.size());
    send_keeper(k, {KeeperLine::Kind::start, settings_.ranks.front() / per_node, 0});
  }
  return true;
}

void AgentServer::keeper_line(KeeperConn& k, const KeeperLine& l) {
  const auto now = Clock::now();
  if (k.local < 0 && (l.kind != KeeperLine::Kind::keeper || !identify_keeper(k, l))) {
    std::string said = format_keeper_line(l);
    said.pop_back();
    std::fprintf(stderr,
                 "dp-nodeagent: job %u step %u node %s: pid %d on the keeper socket is none of the "
                 "node's tasks (it said \"%s\"): closed\n",
                 settings_.job, settings_.step, settings_.host.c_str(), k.pid, said.c_str());
    return (void)keepers_.erase(k.id);
  }
  const int rank = keeper_rank(k.local);
  switch (l.kind) {
    case KeeperLine::Kind::keeper: return;
    case KeeperLine::Kind::started:
      k.running = true;
      k.exit_told = false;
      k.started = true;
      if (rank >= 0)
        tasks_.started(
            TaskStart{rank, static_cast<int>(l.a), static_cast<unsigned long long>(l.b)});
      return check_restart_ready();
    case KeeperLine::Kind::exited:
      k.running = false;
      if (rank >= 0) tasks_.exited(rank);
      if (core_.restarting()) return;  // stopped on the daemon's word: no loss
      k.exit_told = true;
      drain_signals();  // a program ended by Slurm's signal: the core knows the signal first
      if (rank >= 0) core_.on_task_exit(rank, static_cast<int>(l.a), now);
      if (core_.aborted() || core_.finished()) send_keeper(k, {KeeperLine::Kind::exit});
      return;
    case KeeperLine::Kind::stopped:
      k.stop_pending = false;
      check_fenced();
      return check_restart_ready();
    case KeeperLine::Kind::start:
    case KeeperLine::Kind::stop:
    case KeeperLine::Kind::fence:
    case KeeperLine::Kind::exit:  // the agent's own words
      return keeper_gone(k.id, "its task's keeper spoke the agent's words");
  }
}

// The daemon's STOP, START, DONE, carried out by the node's keepers; a step
// without keepers (a per-node launcher restarts its own workers) answers at once.
void AgentServer::restart(const proto::Restart& r) {
  // The daemon's repeat on a new link: the answer again if it went out
  // (maybe on the old link), else it goes once the keepers are done.
  if (restart_ && restart_->generation() == r.generation() && restart_->phase() == r.phase() &&
      r.phase() != proto::Restart::DONE) {
    if (restart_told_) core_.restart_ready(r.generation(), r.phase());
    return;
  }
  restart_ = r;
  restart_told_ = false;
  // A keeper that says who it is only later hears it then (identify_keeper).
  if (r.phase() == proto::Restart::DONE) released_ = true;
  for (auto& [id, k] : keepers_)
    if (k->local >= 0) tell_keeper(*k, r);
  std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: restart %llu: %s\n", settings_.job,
               settings_.step, settings_.host.c_str(),
               static_cast<unsigned long long>(r.generation()),
               r.phase() == proto::Restart::STOP    ? "stopping the node's programs"
               : r.phase() == proto::Restart::START ? "starting them again"
                                                    : "every rank is done; the tasks end");
  check_restart_ready();
}

void AgentServer::tell_keeper(KeeperConn& k, const proto::Restart& r) {
  switch (r.phase()) {
    case proto::Restart::STOP:
      k.stop_pending = true;
      return send_keeper(k, {KeeperLine::Kind::stop, settings_.kill_grace.count()});
    case proto::Restart::START:
      k.started = false;
      return send_keeper(k, {KeeperLine::Kind::start, r.node_rank(), r.restart_count()});
    default: return send_keeper(k, {KeeperLine::Kind::exit});
  }
}

void AgentServer::check_restart_ready() {
  if (!restart_ || restart_told_) return;
  const auto phase = restart_->phase();
  if (phase != proto::Restart::STOP && phase != proto::Restart::START) return;
  size_t ready = 0;
  for (const auto& [id, k] : keepers_) {
    if (k->local < 0) continue;
    if (phase == proto::Restart::STOP ? k->stop_pending : !k->started) return;
    ++ready;
  }
  // Every task's keeper has started its program (a node without keepers: at once).
  if (phase == proto::Restart::START && settings_.keepers && ready < settings_.task_ids.size())
    return;
  restart_told_ = true;
  core_.restart_ready(restart_->generation(), phase);
}

// Root's lines in a keepers' step name the keepers (its tasks): their pids
// identify them; a keeper that ends before its program's end was told is
// that program's end (a SIGKILL of the whole task, say).
void AgentServer::keeper_task_started(const TaskStart& t) {
  const auto& ids = settings_.task_ids;
  const auto it = std::find(ids.begin(), ids.end(), t.rank);
  if (it != ids.end()) keeper_tasks_[static_cast<int>(it - ids.begin())] = t;
}

// Slurm's task ended: after the step's end (DONE, an abort) that is its
// way out; before it, the node can no longer hold its ranks.
void AgentServer::keeper_task_exited(int task_id, int wait_status) {
  const auto& ids = settings_.task_ids;
  const auto it = std::find(ids.begin(), ids.end(), task_id);
  if (it == ids.end()) return;
  const int rank = keeper_rank(static_cast<int>(it - ids.begin()));
  if (rank < 0 || released_ || core_.aborted()) return;
  core_.on_task_gone(rank,
                     "its task ended (wait status " + std::to_string(wait_status) +
                         "), and Slurm starts no task again",
                     Clock::now());
}

// A keeper's connection ended (the task died, or said nonsense).
void AgentServer::keeper_gone(uint64_t id, const std::string& why) {
  auto it = keepers_.find(id);
  if (it == keepers_.end()) return;
  const int rank = keeper_rank(it->second->local);
  const bool stranger = it->second->local < 0;
  keepers_.erase(it);
  if (!stranger && rank >= 0 && !released_ && !core_.aborted() && !fencing_)
    core_.on_task_gone(rank, why, Clock::now());
  check_fenced();
  check_restart_ready();
}

// The node's programs die now, whole trees (a keeper's "fence"; a task
// without one: its tree from here, then the task). The core answers the
// daemon once every keeper said "stopped".
void AgentServer::fence_programs(const std::string& why) {
  if (fencing_) return;
  fencing_ = true;
  std::fprintf(stderr,
               "dp-nodeagent: job %u step %u node %s: fencing: SIGKILL to every program's whole "
               "process tree (%s)\n",
               settings_.job, settings_.step, settings_.host.c_str(), why.c_str());
  for (auto& [id, k] : keepers_) {
    if (k->local < 0) continue;
    k->stop_pending = true;
    send_keeper(*k, {KeeperLine::Kind::fence});
  }
  if (!settings_.keepers) tasks_.kill_trees();
  check_fenced();
}

void AgentServer::check_fenced() {
  if (!fencing_) return;
  for (const auto& [id, k] : keepers_)
    if (k->local >= 0 && k->stop_pending) return;
  core_.fenced();
}

// The step failed: running programs get the agents' signals (LocalTasks);
// keepers without one end now.
void AgentServer::release_idle_keepers() {
  for (auto& [id, k] : keepers_)
    if (k->local >= 0 && !k->running) send_keeper(*k, {KeeperLine::Kind::exit});
}

}  // namespace dp::agent
