#include "agent_server.hpp"

#include <event2/event.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "dp/params.hpp"
#include "unix_connect.hpp"

namespace dp::agent {
namespace {

void write_line(const std::string& line) {
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  // Root reads until EOF: the answer is complete.
  const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) {
    dup2(devnull, STDOUT_FILENO);
    ::close(devnull);
  }
}

AgentConfig core_config(const AgentSettings& s) {
  AgentConfig c;
  c.secret = s.secret;
  c.host = s.host;
  c.daemon_addr = s.addr;
  c.world_size = s.world_size;
  c.node_ranks = s.ranks;
  return c;
}

}  // namespace

AgentServer::AgentServer(const AgentSettings& s, std::string socket)
    : settings_(s),
      socket_(std::move(socket)),
      core_(core_config(s), *this, Clock::now()),
      daemon_reader_(rdv::kHelloFrameLimit) {}

Result<std::unique_ptr<AgentServer>> AgentServer::create(const AgentSettings& s, int daemon_fd,
                                                         int listen_fd, std::string socket) {
  std::unique_ptr<AgentServer> a(new AgentServer(s, std::move(socket)));
  a->daemon_fd_ = daemon_fd;
  a->listen_fd_ = listen_fd;
  a->base_ = event_base_new();
  if (!a->base_) return make_error(Errc::internal, "event_base_new failed");
  AgentServer* self = a.get();
  a->daemon_rd_ = event_new(a->base_, daemon_fd, EV_READ | EV_PERSIST, &on_daemon_read, self);
  a->daemon_wr_ = event_new(a->base_, daemon_fd, EV_WRITE | EV_PERSIST, &on_daemon_write, self);
  a->accept_ev_ = event_new(a->base_, listen_fd, EV_READ | EV_PERSIST, &on_accept, self);
  a->control_ev_ = event_new(a->base_, STDIN_FILENO, EV_READ | EV_PERSIST, &on_control, self);
  a->tick_ev_ = event_new(a->base_, -1, EV_PERSIST, &on_tick, self);
  timeval tv{0, 100'000};
  for (event* e : {a->daemon_rd_, a->accept_ev_, a->control_ev_}) event_add(e, nullptr);
  event_add(a->tick_ev_, &tv);
  a->answer_by_ = Clock::now() + s.port_wait + std::chrono::seconds(2);
  if (s.master == MasterPort::publish) a->core_.publish(kMasterPortKey, s.master_value);
  // After the publish on the same connection: nodes waiting for the port get
  // the failure first, and the step's first failure is the master's cause.
  if (s.master == MasterPort::publish && !s.master_value.empty() &&
      s.master_value[0] == kFailureMark)
    a->core_.abort_step(kMasterFailed + s.master_value.substr(1));
  if (s.master == MasterPort::fetch) a->core_.fetch(kMasterPortKey, s.port_wait);
  return a;
}

AgentServer::~AgentServer() {
  for (auto& [id, c] : conns_) {
    if (c->rd) event_free(c->rd);
    if (c->wr) event_free(c->wr);
    ::close(c->fd);
  }
  for (event* e : {daemon_rd_, daemon_wr_, accept_ev_, control_ev_, tick_ev_})
    if (e) event_free(e);
  if (base_) event_base_free(base_);
  if (daemon_fd_ >= 0) ::close(daemon_fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int AgentServer::run() {
  event_base_dispatch(base_);
  return status_;
}

void AgentServer::stop(int status, const std::string& why) {
  if (!answered_) {
    answered_ = true;
    write_line(format_answer(make_error(Errc::unavailable, why)));
  }
  status_ = status;
  std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: exiting: %s\n", settings_.job,
               settings_.step, settings_.host.c_str(), why.c_str());
  // What the core queued last (the abort to the ranks, a goodbye) leaves first.
  for (auto& [id, c] : conns_) flush(c->fd, c->out, c->out_pos, nullptr);
  flush(daemon_fd_, daemon_out_, daemon_out_pos_, nullptr);
  event_base_loopbreak(base_);
}

void AgentServer::on_tick(int, short, void* arg) { static_cast<AgentServer*>(arg)->tick(); }
void AgentServer::on_accept(int, short, void* arg) {
  static_cast<AgentServer*>(arg)->accept_some();
}
void AgentServer::on_control(int, short, void* arg) {
  static_cast<AgentServer*>(arg)->read_control();
}
void AgentServer::on_daemon_read(int, short, void* arg) {
  static_cast<AgentServer*>(arg)->read_daemon();
}
void AgentServer::on_daemon_write(int, short, void* arg) {
  auto* a = static_cast<AgentServer*>(arg);
  if (!a->flush(a->daemon_fd_, a->daemon_out_, a->daemon_out_pos_, a->daemon_wr_))
    a->core_.on_daemon_lost("cannot write to the step's daemon");
}

void AgentServer::tick() {
  const auto now = Clock::now();
  core_.on_tick(now);
  answer_root();
  if (core_.finished()) return stop(1, core_.end_reason());
  if (!answered_ && now >= answer_by_)
    stop(1, "no MASTER_PORT from the master node through the step's daemon in time");
}

// Root waits for one line: the socket, with the master port once known.
// A lost daemon is answered by the callers' stop().
void AgentServer::answer_root() {
  if (answered_ || !core_.daemon_ready()) return;
  AgentAnswer a{0, socket_};
  if (settings_.master != MasterPort::none) {
    const auto& got = core_.exchange_answer();
    if (!got) return;
    answered_ = true;
    if (!*got) return write_line(format_answer(got->error()));
    const std::string& v = **got;
    if (!v.empty() && v[0] == kFailureMark && settings_.master == MasterPort::fetch) {
      return write_line(format_answer(make_error(Errc::aborted, kMasterFailed + v.substr(1))));
    }
    // The master node publishes its own lease: root knows it, failure included.
    auto port = settings_.master == MasterPort::publish ? Result<long long>(0)
                                                        : parse_whole_number(v, 1, 65535);
    if (!port)
      return write_line(format_answer(make_error(
          Errc::protocol, "the step's daemon answered '" + rdv::sanitized(v.substr(0, 64)) +
                              "' for MASTER_PORT, not a port")));
    a.port = static_cast<int>(*port);
  }
  answered_ = true;
  write_line(format_answer(a));
}

void AgentServer::read_control() {
  char buf[4096];
  const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    // The step ended on this node: the node leaves the daemon cleanly.
    proto::Request bye;
    bye.set_id(0);
    bye.mutable_goodbye();
    to_daemon(bye);
    return stop(0, "the step ended (slurmstepd closed the control pipe)");
  }
  control_buf_.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = control_buf_.find('\n')) != std::string::npos;) {
    if (auto e = parse_task_exit(std::string_view(control_buf_).substr(0, nl)))
      core_.on_task_exit(e->first, e->second, Clock::now());
    control_buf_.erase(0, nl + 1);
  }
  if (control_buf_.size() > 4096) control_buf_.clear();
}

void AgentServer::read_daemon() {
  char buf[65536];
  const ssize_t n = ::recv(daemon_fd_, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    core_.on_daemon_lost("the connection to the step's daemon closed (srun ended or died)");
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
  if (core_.finished()) stop(1, core_.end_reason());
}

}  // namespace dp::agent
