#include "agent_server.hpp"

#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dp/params.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "unix_connect.hpp"

namespace dp::agent {
namespace {

constexpr int kAcceptBatch = 64;

void write_line(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  // Root reads until EOF: the answer is complete.
  if (const UniqueFd devnull(open("/dev/null", O_WRONLY | O_CLOEXEC)); devnull)
    dup2(devnull.get(), STDOUT_FILENO);
}

AgentConfig core_config(const AgentSettings& s) {
  AgentConfig c;
  c.secret = s.secret;
  c.host = s.host;
  c.daemon_addr = s.addr;
  c.world_size = s.world_size;
  c.node_ranks = s.ranks;
  c.on_failure = s.on_failure;
  c.node = s.node;
  c.daemon_silence = s.heartbeat_timeout;
  c.fence_after = s.fence_after;
  return c;
}

}  // namespace

AgentServer::AgentServer(const AgentSettings& s, std::string socket)
    : settings_(s),
      socket_(std::move(socket)),
      core_(core_config(s), *this, Clock::now()),
      daemon_reader_(rdv::kHelloFrameLimit),
      store_(core_, *this) {}

Result<std::unique_ptr<AgentServer>> AgentServer::create(
    const AgentSettings& s, DaemonLink daemon, service::UniqueFd listen_fd, std::string socket,
    service::StepSignalPipe signals, service::UniqueFd store_fd, PortHolds holds,
    FlightPlaces flight, service::UniqueFd keeper_fd) {
  std::unique_ptr<AgentServer> a(new AgentServer(s, std::move(socket)));
  a->signals_ = std::move(signals);
  a->holds_ = std::move(holds);
  a->flight_ = std::move(flight);
  a->daemon_fd_ = std::move(daemon.fd);
  a->daemon_reader_ = std::move(daemon.reader);
  DP_TRY(a->start_events(std::move(listen_fd)));
  if (store_fd) {
    sockaddr_in sa{};
    socklen_t len = sizeof sa;
    if (getsockname(store_fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
      return make_error(Errc::internal, std::string("getsockname: ") + dp::errno_text());
    a->store_port_ = ntohs(sa.sin_port);
    a->store_due_ev_ = service::make_event(a->base_.get(), -1, 0, &on_store_due, a.get());
    if (!a->store_due_ev_)
      return make_error(Errc::internal, "cannot set up the event loop (libevent)");
    DP_TRY(a->store_listener_.start(
        a->base_.get(), std::move(store_fd), kAcceptBatch, "dp-nodeagent (PyTorch store)",
        [p = a.get()](service::UniqueFd c) { p->admit_store(std::move(c)); }));
  }
  if (keeper_fd)
    DP_TRY(a->keeper_listener_.start(
        a->base_.get(), std::move(keeper_fd), kAcceptBatch, "dp-nodeagent (task keepers)",
        [p = a.get()](service::UniqueFd c) { p->admit_keeper(std::move(c)); }));
  const auto now = Clock::now();
  a->core_.hello_answered(daemon.reply, now);
  if (a->core_.daemon_ready()) a->daemon_reader_.set_max_frame_bytes(rdv::kMaxFrameBytes);
  // What came right after the reply (an abort push) is not left waiting for more bytes.
  for (auto r = a->daemon_reader_.next(); r && *r; r = a->daemon_reader_.next())
    a->core_.on_daemon_response(**r, now);
  a->answer_by_ = Clock::now() + s.port_wait + std::chrono::seconds(2);
  if (s.master == PortsRole::publish) a->core_.publish_step_ports(s.published);
  if (s.master == PortsRole::fetch) a->core_.fetch_step_ports(s.port_wait);
  return a;
}

// The daemon's connection, the ranks' listener, slurmstepd's control pipe
// (stdin) and the tick.
Result<void> AgentServer::start_events(service::UniqueFd listen_fd) {
  base_.reset(event_base_new());
  if (!base_) return make_error(Errc::internal, "event_base_new failed");
  event_base* b = base_.get();
  const timeval tick{0, 100'000};
  set_daemon_events();
  control_ev_ = service::watch(b, STDIN_FILENO, EV_READ | EV_PERSIST, &on_control, this);
  tick_ev_ = service::watch(b, -1, EV_PERSIST, &on_tick, this, &tick);
  workers_ev_ = service::watch(b, workers_.fd(), EV_READ | EV_PERSIST, &on_worker_end, this);
  signal_ev_ = service::watch(b, signals_.fd(), EV_READ | EV_PERSIST, &on_signal, this);
  // Without an eventfd there is no stacks reader: asks go unanswered, the daemon names the node.
  if (stacks_.fd() >= 0)
    stacks_ev_ = service::watch(b, stacks_.fd(), EV_READ | EV_PERSIST, &on_stacks_read, this);
  if (!daemon_rd_ || !daemon_wr_ || !control_ev_ || !tick_ev_ || !workers_ev_ || !signal_ev_)
    return make_error(Errc::internal, "cannot set up the event loop (libevent)");
  return listener_.start(b, std::move(listen_fd), kAcceptBatch, "dp-nodeagent",
                         [this](service::UniqueFd c) { admit(std::move(c)); });
}

void AgentServer::set_daemon_events() {
  const int d = daemon_fd_.get();
  daemon_rd_ = service::watch(base_.get(), d, EV_READ | EV_PERSIST, &on_daemon_read, this);
  daemon_wr_ = service::make_event(base_.get(), d, EV_WRITE | EV_PERSIST, &on_daemon_write, this);
}

// Members go in the right order: connections and events before the base.
AgentServer::~AgentServer() = default;

int AgentServer::run() {
  event_base_dispatch(base_.get());
  return status_;
}

void AgentServer::stop(int status, const std::string& why) {
  if (!answered_) answer(make_error(Errc::unavailable, why));
  status_ = status;
  std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: exiting: %s\n", settings_.job,
               settings_.step, settings_.host.c_str(), why.c_str());
  // What the core queued last (the abort to the ranks, a goodbye) leaves first.
  for (auto& [id, c] : conns_) flush(c->fd.get(), c->out, c->out_pos, nullptr);
  for (auto& [id, c] : store_conns_) flush(c->fd.get(), c->out, c->out_pos, nullptr);
  flush(daemon_fd_.get(), daemon_out_, daemon_out_pos_, nullptr);
  event_base_loopbreak(base_.get());
}

void AgentServer::on_tick(evutil_socket_t, short, void* arg) {
  static_cast<AgentServer*>(arg)->tick();
}
void AgentServer::on_control(evutil_socket_t, short, void* arg) {
  static_cast<AgentServer*>(arg)->read_control();
}
void AgentServer::on_daemon_read(evutil_socket_t, short, void* arg) {
  static_cast<AgentServer*>(arg)->read_daemon();
}
void AgentServer::on_daemon_write(evutil_socket_t, short, void* arg) {
  auto* a = static_cast<AgentServer*>(arg);
  if (!a->flush(a->daemon_fd_.get(), a->daemon_out_, a->daemon_out_pos_, a->daemon_wr_.get()))
    a->daemon_failed(errno, "cannot write to the step's daemon");
}

void AgentServer::on_worker_end(evutil_socket_t, short, void* arg) {
  static_cast<AgentServer*>(arg)->worker_ended();
}

// dp-top --stacks: in a launcher step the workers are the ranks, else the tasks.
void AgentServer::read_stacks(uint64_t ask, std::chrono::milliseconds deadline, bool flight) {
  stacks_.ask(ask, settings_.watch_workers ? workers_.running() : tasks_.running(), deadline,
              flight ? flight_.dir() : std::string());
}

void AgentServer::sample_ranks(std::chrono::milliseconds every) {
  sampler_.set_ranks(settings_.watch_workers ? workers_.running() : tasks_.running());
  sampler_.start(every);
}

void AgentServer::add_samples(proto::Heartbeat& hb) {
  for (auto& s : sampler_.counts()) *hb.add_samples() = std::move(s);
}

void AgentServer::on_stacks_read(evutil_socket_t, short, void* arg) {
  auto* a = static_cast<AgentServer*>(arg);
  for (auto& answer : a->stacks_.take()) {
    const uint64_t ask = answer.ask();
    proto::Request r;  // id 0: no reply
    *r.mutable_stacks_answer() = std::move(answer);
    a->to_daemon(r);
    a->core_.stacks_sent(ask);  // after a failure: the tasks are ended now
  }
}

void AgentServer::on_signal(evutil_socket_t, short, void* arg) {
  static_cast<AgentServer*>(arg)->drain_signals();
}

void AgentServer::drain_signals() {
  const auto now = Clock::now();
  for (int sig : signals_.drain()) {
    std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: SIG%s from Slurm (for the tasks)\n",
                 settings_.job, settings_.step, settings_.host.c_str(), signal_name(sig).c_str());
    core_.on_step_signal(sig, now);
  }
}

// A launcher's worker failed: the node's failure, reported before the launcher
// notices it (launcher_workers.hpp).
void AgentServer::worker_ended() {
  drain_signals();
  for (const WorkerEnd& e : workers_.ended())
    core_.on_worker_exit(e.task_rank, e.worker_rank, e.wait_status, Clock::now());
}

void AgentServer::tick() {
  const auto now = Clock::now();
  core_.on_tick(now);
  tasks_.tick(now);
  if (now >= next_scan_) {
    next_scan_ = now + std::chrono::seconds(1);
    workers_.scan();
    sampler_.set_ranks(settings_.watch_workers ? workers_.running() : tasks_.running());
  }
  if (auto link = relink_.take()) adopt_link(std::move(*link));
  for (int port : holds_.release_listened(now, getuid()))
    std::fprintf(stderr,
                 "dp-nodeagent: job %u step %u node %s: port %d: the step's program listens on it; "
                 "slurm-dp's hold ends\n",
                 settings_.job, settings_.step, settings_.host.c_str(), port);
  answer_root();
  if (core_.finished()) return finish();
  if (!answered_ && now >= answer_by_)
    stop(1, "no MASTER_PORT from the master node through the step's daemon in time");
}

// Root waits for one line: the socket, with the master port once known, or
// the master node's failure. A lost daemon is answered by the callers' stop().
void AgentServer::answer_root() {
  if (answered_) return;
  const auto& got = core_.step_ports();
  const MasterFailure* failed = got && *got && (*got)->failure ? &*(*got)->failure : nullptr;
  // Known even when the daemon refused this node (its hello came after the abort).
  if (failed && settings_.master == PortsRole::fetch) {
    AgentAnswer a;
    a.master_failure = *failed;
    return answer(a);
  }
  if (!core_.daemon_ready()) return;
  AgentAnswer a;
  a.socket = socket_;
  a.store_port = store_port_;
  a.flight_dir = flight_.dir();
  a.ras_port = flight_.ras_port();
  if (settings_.master != PortsRole::none) {
    if (!got) return;
    if (!*got) return answer(got->error());
    // The master node publishes its own lease: root knows it, failure included.
    if (settings_.master == PortsRole::fetch) {
      a.port = (*got)->coordinator;
      a.dp_ports = (*got)->dp_ports;
    }
  }
  answer(a);
}

void AgentServer::answer(const Result<AgentAnswer>& a) {
  answered_ = true;
  write_line(format_answer(a));
}

void AgentServer::read_control() {
  char buf[4096];
  const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    // slurmstepd died (killed with its node, say): its pipe closes before the
    // kernel's death signal reaches us, and a goodbye now would tell the
    // daemon that the node's ranks finished. Its link's drop says it is lost.
    if (!step_ended_) return stop(1, "slurmstepd ended without ending the step on this node");
    // The step ended on this node: the node leaves the daemon cleanly.
    proto::Request bye;
    bye.set_id(0);
    bye.mutable_goodbye();
    to_daemon(bye);
    return stop(0, "the step ended (slurmstepd closed the control pipe)");
  }
  control_buf_.append(buf, static_cast<size_t>(n));
  drain_signals();
  for (size_t nl; (nl = control_buf_.find('\n')) != std::string::npos;) {
    const std::string_view line = std::string_view(control_buf_).substr(0, nl);
    if (line == kStepEndLine) step_ended_ = true;
    // With keepers root's tasks are the keepers; their programs are the ranks.
    if (auto t = parse_task_start(line); t && settings_.keepers) keeper_task_started(*t);
    if (auto e = parse_task_exit(line); e && settings_.keepers)
      keeper_task_exited(e->first, e->second);
    if (settings_.keepers) {
      control_buf_.erase(0, nl + 1);
      continue;
    }
    // Only a launcher's workers are watched: a plain task's children cost no scans.
    if (auto t = parse_task_start(line); t && tasks_.started(*t) && settings_.watch_workers)
      workers_.watch(*t);
    if (auto e = parse_task_exit(line)) {
      tasks_.exited(e->first);
      workers_.forget(e->first);
      core_.on_task_exit(e->first, e->second, Clock::now());
    }
    control_buf_.erase(0, nl + 1);
  }
  if (control_buf_.size() > 4096) control_buf_.clear();
}

void AgentServer::read_daemon() {
  char buf[65536];
  const ssize_t n = ::recv(daemon_fd_.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    daemon_failed(n == 0 ? 0 : errno, "the connection to the step's daemon");
  } else if (auto fed = daemon_reader_.feed(buf, static_cast<size_t>(n)); !fed) {
    core_.on_daemon_lost(fed.error().message);
  } else {
    const auto now = Clock::now();
    for (;;) {
      auto r = daemon_reader_.next();
      if (!r) {
        core_.on_daemon_lost("bad frame from the step's daemon: " + r.error().message);
        break;
      }
      if (!*r) break;
      core_.on_daemon_response(**r, now);
      if (core_.daemon_ready()) daemon_reader_.set_max_frame_bytes(rdv::kMaxFrameBytes);
    }
  }
  answer_root();
  if (core_.finished()) finish();
}

// An end or a reset is the peer's answer (srun or its daemon died, its host
// rebooted): the node is done at once. A timeout or an unreachable network is
// no answer: the link is in doubt and a new one is tried within the bound.
// While that runs, the old connection's end is no news (the daemon closes it
// when the new one takes over): it is only no longer read.
void AgentServer::daemon_failed(int err, const std::string& what) {
  if (core_.relinking()) {
    if (daemon_rd_) event_del(daemon_rd_.get());
    if (daemon_wr_) event_del(daemon_wr_.get());
    return;
  }
  if (err == 0) return core_.on_daemon_lost(what + " closed (srun ended or died)");
  const std::string why = what + ": " + dp::errno_text(err);
  if (err == ECONNRESET || err == EPIPE || err == ECONNABORTED) return core_.on_daemon_lost(why);
  core_.on_daemon_doubt(why, Clock::now());
}

void AgentServer::relink(Clock::time_point deadline) {
  HelloRetry retry;
  retry.deadline = deadline;
  // Short attempts: a connect sent into a cut network is tried again soon
  // after it comes back, not when the kernel's SYN backoff says.
  retry.attempt = std::chrono::seconds(1);
  retry.max_backoff = std::chrono::milliseconds(500);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  std::fprintf(stderr,
               "dp-nodeagent: job %u step %u node %s: the link to the step's daemon is in doubt "
               "(%s): reconnecting for at most %lld ms (site key heartbeat_timeout)\n",
               settings_.job, settings_.step, settings_.host.c_str(), core_.doubt().c_str(),
               static_cast<long long>(left.count()));
  // The ranks the node holds now: a spare's change when it takes a lost node's place.
  relink_.start(NodeHello{settings_.addr, settings_.secret, settings_.host, settings_.world_size,
                          core_.node_ranks(), settings_.node},
                retry);
}

// The new connection replaces the old one, whose unsent bytes are dropped:
// the core sends its unanswered requests again.
void AgentServer::adopt_link(Result<DaemonLink> link) {
  const auto now = Clock::now();
  // The bound ran out meanwhile: the node is leaving; the new link closes unused.
  if (!core_.relinking()) return;
  if (!link) return core_.relink_failed(link.error().message, now);
  daemon_rd_.reset();
  daemon_wr_.reset();
  daemon_fd_ = std::move(link->fd);
  daemon_reader_ = std::move(link->reader);
  daemon_out_.clear();
  daemon_out_pos_ = 0;
  set_daemon_events();
  if (!daemon_rd_ || !daemon_wr_)
    return core_.relink_failed("cannot watch the new connection", now);
  core_.relinked(link->reply, now);
  if (core_.daemon_ready()) {
    daemon_reader_.set_max_frame_bytes(rdv::kMaxFrameBytes);
    std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: reconnected to the step's daemon\n",
                 settings_.job, settings_.step, settings_.host.c_str());
  }
  for (auto r = daemon_reader_.next(); r && *r; r = daemon_reader_.next())
    core_.on_daemon_response(**r, now);
}

void AgentServer::finish() {
  // EOF stays readable: the loop would spin on it while the tasks end.
  if (daemon_rd_) event_del(daemon_rd_.get());
  if (daemon_wr_) event_del(daemon_wr_.get());
  if (!tasks_.ending()) stop(1, core_.end_reason());
}

void AgentServer::end_tasks(const std::string& why, const std::set<int>& told) {
  const auto grace = settings_.kill_grace;
  const int n = tasks_.end_all(Clock::now(), grace, told);
  if (settings_.keepers) release_idle_keepers();
  std::fprintf(stderr,
               "dp-nodeagent: job %u step %u node %s: the step failed (%s): SIGTERM to %d task(s) "
               "(%zu told through libdp), SIGKILL after %lld ms (site key kill_grace)\n",
               settings_.job, settings_.step, settings_.host.c_str(), why.c_str(), n, told.size(),
               static_cast<long long>(grace.count()));
}

}  // namespace dp::agent
