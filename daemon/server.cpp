#include "server.hpp"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

#include "dp/random_bytes.hpp"
#include "dp/sys_error.hpp"
#include "process_start.hpp"
#include "slurm_step_end.hpp"
#include "step_nodes.hpp"
#include "step_socket.hpp"

namespace dp::daemon {
namespace {

constexpr size_t kMaxOutBytes = 64u << 20;  // a peer that never reads is dropped
constexpr auto kCloseGrace = std::chrono::seconds(2);
constexpr int kAcceptBatch = 256;
constexpr int kReservedFds = 32;  // listener, epoll, signals, stdio, the spare, logs
constexpr int kMinAgents = 16;    // the nodes' plugins of a step, tools
// A connection that got no frame this long gets a keepalive. The 100 ms tick
// checks, so no peer waits over 1.4 s (agents doubt a daemon after 3 s), and
// a peer that got any answer lately costs no send: at 16 384 nodes a ping
// each is a send per node.
constexpr auto kPingQuiet = std::chrono::milliseconds(1'300);

// How many descriptors the step needs, and whether the limit holds them. With
// node agents (--nodes) that follows nodes: 131 072 ranks on 16 384 nodes fit
// a hard limit of 20 000.
Result<void> size_budget(DaemonOptions& o) {
  const long long peers = o.limits.nodes > 0 ? o.limits.nodes : o.world_size;
  const long long need = peers + o.limits.max_unauthenticated + kMinAgents + kReservedFds;
  if (o.max_connections == 0) {
    const rlim_t lim = static_cast<rlim_t>(service::raise_fd_limit());
    const long long have = lim == RLIM_INFINITY ? (1ll << 30) : static_cast<long long>(lim);
    if (have < need) {
      return make_error(
          Errc::limit,
          "the open-file limit (RLIMIT_NOFILE, hard limit " + std::to_string(have) +
              ") is too low for a step of " + std::to_string(o.world_size) + " ranks" +
              (o.limits.nodes > 0 ? " on " + std::to_string(o.limits.nodes) + " nodes" : "") +
              ": dp-rendezvousd needs at least " + std::to_string(need) +
              " descriptors; raise the hard limit where srun runs (ulimit -Hn " +
              std::to_string(need) +
              " as root, nofile in /etc/security/limits.conf, or LimitNOFILE= for a service)");
    }
    o.max_connections = static_cast<int>(std::min<long long>(have - kReservedFds, 1 << 30));
  }
  const long long spare =
      static_cast<long long>(o.max_connections) - peers - o.limits.max_unauthenticated;
  o.limits.max_agents = static_cast<int>(std::clamp<long long>(spare, 4, 1 << 20));
  return {};
}

// A listening socket on `addr` (numeric) and `port` (0: the OS chooses),
// backlog SOMAXCONN; EADDRINUSE comes back as Errc::unavailable, so a range
// moves on to its next port.
Result<service::UniqueFd> listen_on(const addrinfo& ai, const std::string& addr, int port) {
  sockaddr_storage sa{};
  std::memcpy(&sa, ai.ai_addr, std::min<size_t>(ai.ai_addrlen, sizeof sa));
  const uint16_t net_port = htons(static_cast<uint16_t>(port));
  if (sa.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port = net_port;
  else reinterpret_cast<sockaddr_in*>(&sa)->sin_port = net_port;
  service::UniqueFd fd(socket(ai.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(Errc::connection, "socket: " + errno_text(errno));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // Accepted sockets inherit TCP_NODELAY from the listener: one syscall less per rank.
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), ai.ai_addrlen) != 0 ||
      listen(fd.get(), SOMAXCONN) != 0) {
    const int e = errno;
    return make_error(
        e == EADDRINUSE ? Errc::unavailable : Errc::connection,
        "cannot listen on " + addr + " port " + std::to_string(port) + ": " + errno_text(e));
  }
  return fd;
}

// A port of `range` on `addr`, tried from a random one (steps started
// together spread), or the OS's choice; `port` is the one taken.
Result<service::UniqueFd> listen_tcp(const std::string& addr, const ListenRange& range,
                                     uint16_t& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (getaddrinfo(addr.c_str(), "0", &hints, &found) != 0 || !found) {
    return make_error(Errc::invalid_argument,
                      "--listen " + addr + ": not a numeric IPv4/IPv6 address");
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> ai(found, freeaddrinfo);
  Result<service::UniqueFd> fd = make_error(Errc::unavailable, listen_range_full(range, addr));
  if (range.any()) {
    fd = listen_on(*ai, addr, 0);
  } else {
    uint32_t start = 0;
    if (auto r = random_bytes(sizeof start)) std::memcpy(&start, r->data(), sizeof start);
    for (int i = 0; i < range.size(); ++i) {
      auto tried = listen_on(*ai, addr, nth_listen_port(range, start, i));
      if (tried || tried.error().code != Errc::unavailable) {
        fd = std::move(tried);
        break;
      }
    }
  }
  DP_TRY(fd);
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  getsockname(fd->get(), reinterpret_cast<sockaddr*>(&sa), &len);
  port = ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
  return fd;
}

}  // namespace

void Server::end_step_in_slurm(const AbortCause& cause) {
  end_step_through_slurmctld(opts_.job_id, opts_.step_id, how_name(cause.how));
}

void Server::notice(const std::string& line) {
  if (opts_.notice_fd < 0) return;
  // srun's stderr may be a pipe nobody reads: a write that blocks must never
  // hold the loop, so it goes on a thread of its own (a notice is rare).
  try {
    std::thread([fd = opts_.notice_fd, text = line + "\n"] {
      for (size_t off = 0; off < text.size();) {
        const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        off += static_cast<size_t>(n);
      }
    }).detach();
  } catch (const std::system_error&) {
    std::fprintf(stderr, "dp-rendezvousd: no thread for a notice: %s\n", line.c_str());
  }
}

Server::Server(const DaemonOptions& opts, std::string secret) : opts_(opts) {
  BrokerConfig cfg;
  cfg.world_size = opts.world_size;
  cfg.secret = std::move(secret);
  cfg.job_id = opts.job_id;
  cfg.step_id = opts.step_id;
  cfg.limits = opts.limits;
  cfg.step_nodes = step_node_addresses(opts.step_nodes);
  broker_ = std::make_unique<Broker>(std::move(cfg), *this, Clock::now());
}

Result<std::unique_ptr<Server>> Server::create(const DaemonOptions& in, std::string secret) {
  DaemonOptions opts = in;
  DP_TRY(size_budget(opts));
  std::unique_ptr<Server> s(new Server(opts, std::move(secret)));
  auto fd = listen_tcp(opts.listen_addr, opts.listen_ports, s->port_);
  DP_TRY(fd);
  // A connection whose data goes unacknowledged for the site's whole bound
  // has lost its peer's host or network (a stopped or suspended process's
  // kernel still acknowledges). Shorter outages are survived: a node agent
  // that doubts its link says hello again on a new one (node_agents.cpp).
  // Accepted connections inherit it; 0 (no bound) leaves the kernel's.
  const long long bound = std::min<long long>(opts.limits.heartbeat_timeout.count(), UINT_MAX);
  const unsigned user_timeout = static_cast<unsigned>(std::max<long long>(bound, 0));
  if (user_timeout > 0)
    setsockopt(fd->get(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
  s->base_.reset(event_base_new());
  if (!s->base_) return make_error(Errc::internal, "event_base_new failed");
  Server* self = s.get();
  DP_TRY(s->listener_.start(s->base_.get(), std::move(*fd), kAcceptBatch, "dp-rendezvousd",
                            [self](service::UniqueFd c) { self->admit(std::move(c)); }));
  DP_TRY(s->start_events());
  s->open_report_sockets();
  s->parent_ = getppid();
  return s;
}

// The user's read-only view of the step (dp-top, srun's closing lines): a
// socket in the user's folder, and always an abstract one too, which another
// user cannot take first. The step runs without them if neither works.
void Server::open_report_sockets() {
  auto answer = [this] { return broker_->stats(); };
  // The tick (every 100 ms) ends a round whose deadline passed.
  auto stacks = [this](ReportSocket::StacksLines done) {
    broker_->ask_stacks(std::move(done), Clock::now());
  };
  if (auto path = obs::socket_path(opts_.job_id, opts_.step_id, true)) {
    auto rs = ReportSocket::create(base_.get(), *path, answer, stacks);
    if (rs) report_socket_ = std::move(*rs);
    else std::fprintf(stderr, "dp-rendezvousd: %s\n", rs.error().message.c_str());
  } else {
    std::fprintf(stderr, "dp-rendezvousd: no report socket in the user's folder: %s\n",
                 path.error().message.c_str());
  }
  auto name = obs::abstract_socket_name(opts_.job_id, opts_.step_id);
  auto rs = name ? ReportSocket::create(base_.get(), *name, answer, stacks)
                 : Result<std::unique_ptr<ReportSocket>>(name.error());
  if (rs) abstract_report_socket_ = std::move(*rs);
  else
    std::fprintf(stderr, "dp-rendezvousd: no abstract report socket: %s\n",
                 rs.error().message.c_str());
}

// The tick, srun's SIGTERM, and the two deferred passes (reaping dropped
// connections, flushing a loop pass's replies).
Result<void> Server::start_events() {
  event_base* b = base_.get();
  const timeval tick{0, 100'000};
  tick_ev_ = service::watch(b, -1, EV_PERSIST, &Server::on_tick, this, &tick);
  sigterm_ev_ = service::watch(b, SIGTERM, EV_SIGNAL | EV_PERSIST, &Server::on_signal, this);
  reap_ev_ = service::make_event(b, -1, 0, &Server::on_reap, this);
  flush_ev_ = service::make_event(b, -1, 0, &Server::on_flush, this);
  if (!tick_ev_ || !sigterm_ev_ || !reap_ev_ || !flush_ev_)
    return make_error(Errc::internal, "cannot set up the event loop (libevent)");
  return {};
}

// Members go in the right order: connections and events before the base.
Server::~Server() = default;

void Server::run() { event_base_dispatch(base_.get()); }

void Server::stop(const char* why) {
  const proto::Stats st = broker_->stats(false);  // two counters for the log
  std::fprintf(
      stderr,
      "dp-rendezvousd: job %s step %s: exiting: %s (requests %llu, keys %llu, startup %s)\n",
      opts_.job_id.c_str(), opts_.step_id.c_str(), why,
      static_cast<unsigned long long>(st.requests()), static_cast<unsigned long long>(st.keys()),
      broker_->startup_summary().c_str());
  event_base_loopbreak(base_.get());
}

void Server::on_signal(evutil_socket_t, short, void* arg) {
  static_cast<Server*>(arg)->stop("signal");
}
void Server::on_tick(evutil_socket_t, short, void* arg) { static_cast<Server*>(arg)->tick(); }

void Server::on_reap(evutil_socket_t, short, void* arg) {
  static_cast<Server*>(arg)->dead_.clear();
}

void Server::admit(service::UniqueFd fd) {
  // At the cap with nobody to evict: refuse. (The broker evicts the oldest
  // connection without hello itself, so ranks are never refused for those.)
  if (static_cast<int>(conns_.size()) >= opts_.max_connections && broker_->unauthenticated() == 0) {
    proto::Response r;
    r.set_code(proto::LIMIT);
    r.set_message("too many connections: the limit is " + std::to_string(opts_.max_connections) +
                  " (dp-rendezvousd --max-connections)");
    std::string frame;
    rdv::append_frame(r, frame);
    [[maybe_unused]] ssize_t n =
        ::send(fd.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    return;
  }
  auto c =
      service::open_conn<Conn, &Server::read_from>(*this, base_.get(), std::move(fd), next_id_++);
  if (!c) return;
  const ConnId id = c->id;
  const std::string source = peer_address(c->fd.get());
  conns_.emplace(id, std::move(c));
  broker_->on_connect(id, Clock::now(), source);
}

void Server::read_from(Conn& c) {
  char buf[65536];
  const ConnId id = c.id;
  bool eof = false;
  for (int round = 0; round < 4; ++round) {
    const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n > 0) {
      c.decoder.feed(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) break;
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) eof = true;
    break;
  }
  const auto now = Clock::now();
  // Frames received before a disconnect still count (a goodbye followed by close).
  while (!c.closing) {
    c.decoder.set_max_frame_bytes(broker_->max_frame_bytes(id));
    c.decoder.keep_oversized_heads();  // the broker refuses by the request's id
    std::string_view payload;
    const auto st = c.decoder.next(payload);
    if (st == rdv::FrameDecoder::Status::need_more) break;
    if (st == rdv::FrameDecoder::Status::too_large) {
      if (!broker_->on_oversized_frame(id, c.decoder.frame_length(), broker_->max_frame_bytes(id),
                                       c.decoder.frame_head()))
        break;
      c.decoder.skip_frame();
      continue;
    }
    broker_->on_frame(id, payload, now);
    if (!conns_.count(id)) return;  // dropped while handling
  }
  if (c.closing) return;
  c.decoder.shrink_if_idle();
  if (eof) {
    broker_->on_disconnect(id, now);
    drop(c);
  }
}

void Server::send(ConnId conn, const proto::Response& r) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.overflowed) return;
  if (c.out.size() - c.out_pos > kMaxOutBytes) {
    // Not from here: the broker is in the middle of a call. on_flush drops it.
    c.overflowed = true;
  } else {
    rdv::append_frame(r, c.out);
    c.last_out = Clock::now();
  }
  if (!c.flush_queued &&
      (c.overflowed || !(c.wr && event_pending(c.wr.get(), EV_WRITE, nullptr)))) {
    c.flush_queued = true;
    flush_queue_.push_back(conn);
    if (flush_queue_.size() == 1) event_active(flush_ev_.get(), EV_TIMEOUT, 0);
  }
}

void Server::on_flush(evutil_socket_t, short, void* arg) {
  auto* s = static_cast<Server*>(arg);
  std::vector<ConnId> q;
  q.swap(s->flush_queue_);
  for (ConnId id : q) {
    auto it = s->conns_.find(id);
    if (it == s->conns_.end()) continue;
    Conn& c = *it->second;
    c.flush_queued = false;
    if (c.overflowed) {
      std::fprintf(stderr, "dp-rendezvousd: a peer does not read its replies; dropping it\n");
      s->broker_->on_disconnect(id, Clock::now());
      s->drop(c);
      continue;
    }
    s->flush(c);
  }
}

void Server::flush(Conn& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (service::make_writer<&Server::flush>(c, base_.get())) {
        event_add(c.wr.get(), nullptr);
        return;
      }
      shutdown(c.fd.get(), SHUT_RDWR);  // no way to wait for room: ends as a lost peer
    }
    // The peer is gone; the read side reports it (or the close finishes it).
    c.out.clear();
    c.out_pos = 0;
    if (c.closing) drop(c);
    return;
  }
  c.out.clear();
  c.out_pos = 0;
  if (c.out.capacity() > 4096) std::string().swap(c.out);
  if (c.wr) event_del(c.wr.get());
  if (c.closing) drop(c);
}

void Server::close(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.closing) return;
  c.closing = true;
  c.closing_since = Clock::now();
  event_del(c.rd.get());
  if (c.out_pos >= c.out.size()) {
    drop(c);
  } else if (!c.flush_queued && !(c.wr && event_pending(c.wr.get(), EV_WRITE, nullptr))) {
    flush(c);
  }
}

void Server::drop(Conn& c) {
  auto it = conns_.find(c.id);
  if (it == conns_.end()) return;
  event_del(c.rd.get());
  if (c.wr) event_del(c.wr.get());
  dead_.push_back(std::move(it->second));
  conns_.erase(it);
  event_active(reap_ev_.get(), EV_TIMEOUT, 0);
}

void Server::tick() {
  auto now = Clock::now();
  // Heartbeats may be waiting unread (after a stop, or a busy loop): read
  // them before anyone is judged silent.
  const auto suspects = broker_->silence_suspects(now);
  if (!suspects.empty()) {
    for (ConnId id : suspects) {
      auto it = conns_.find(id);
      if (it != conns_.end() && !it->second->closing) read_from(*it->second);
    }
    now = Clock::now();
  }
  broker_->on_tick(now);
  broker_->expire_stacks(now);
  // One pass over the connections: those to ping, those whose close is stuck.
  std::vector<ConnId> quiet;
  std::vector<Conn*> stuck;
  const auto quiet_since = now - kPingQuiet;
  for (auto& [id, c] : conns_) {
    if (!c->closing) {
      if (c->last_out < quiet_since) quiet.push_back(id);
    } else if (now - c->closing_since > kCloseGrace) {
      stuck.push_back(c.get());
    }
  }
  if (!quiet.empty()) broker_->ping(quiet);
  for (Conn* c : stuck) drop(*c);
  // The daemon lives exactly as long as its step: srun stops it at the
  // step's end; it never leaves on its own while srun lives (a second
  // dp::init() or a late task may still come).
  if (getppid() != parent_) return stop("the parent process (srun) is gone");
}

}  // namespace dp::daemon
