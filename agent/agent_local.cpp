// AgentServer's connections: the node's ranks on the abstract socket, and
// the writes to the daemon.
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agent_server.hpp"
#include "unix_connect.hpp"

namespace dp::agent {
namespace {
constexpr size_t kMaxOutBytes = 64u << 20;  // a rank that never reads is dropped
constexpr int kAcceptBatch = 64;
}  // namespace

void AgentServer::accept_some() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    // An abstract name has no file mode: only this user's processes are served.
    auto uid = rdv::peer_uid(fd);
    if (!uid || *uid != getuid()) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->server = this;
    c->fd = fd;
    c->id = next_id_++;
    c->rd = event_new(base_, fd, EV_READ | EV_PERSIST,
                      &service::on_conn_event<Conn, &AgentServer::read_rank>, c.get());
    event_add(c->rd, nullptr);
    const ConnId id = c->id;
    conns_.emplace(id, std::move(c));
    core_.on_rank_connect(id, Clock::now());
  }
}

void AgentServer::read_rank(Conn& c) {
  char buf[65536];
  const ConnId id = c.id;
  const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  const auto now = Clock::now();
  if (n > 0) c.decoder.feed(buf, static_cast<size_t>(n));
  while (conns_.count(id) && !c.closing) {
    c.decoder.set_max_frame_bytes(core_.max_frame_bytes(id));
    std::string_view payload;
    const auto st = c.decoder.next(payload);
    if (st == rdv::FrameDecoder::Status::need_more) break;
    if (st == rdv::FrameDecoder::Status::too_large) {
      core_.on_rank_oversized(id, c.decoder.frame_length());
      break;
    }
    core_.on_rank_frame(id, payload, now);
  }
  if (!conns_.count(id) || c.closing) return;
  c.decoder.shrink_if_idle();
  if (n <= 0) {
    core_.on_rank_disconnect(id, now);
    drop(id);
  }
}

// False when the peer is gone.
bool AgentServer::flush(int fd, std::string& out, size_t& pos, event* wr) {
  while (pos < out.size()) {
    const ssize_t n = ::send(fd, out.data() + pos, out.size() - pos, MSG_NOSIGNAL);
    if (n > 0) {
      pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wr) event_add(wr, nullptr);
      return true;
    }
    out.clear();
    pos = 0;
    return false;
  }
  out.clear();
  pos = 0;
  if (wr) event_del(wr);
  return true;
}

void AgentServer::flush_rank(Conn& c) {
  if (!c.wr)
    c.wr = event_new(base_, c.fd, EV_WRITE | EV_PERSIST,
                     &service::on_conn_event<Conn, &AgentServer::flush_rank>, &c);
  const bool alive = flush(c.fd, c.out, c.out_pos, c.wr);
  // A closing connection goes once its last reply left (or could not).
  if (c.closing && (!alive || c.out.empty())) drop(c.id);
}

void AgentServer::drop(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.rd) event_free(c.rd);
  if (c.wr) event_free(c.wr);
  ::close(c.fd);
  conns_.erase(it);
}

void AgentServer::to_rank(ConnId conn, const proto::Response& r) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.out.size() - c.out_pos > kMaxOutBytes) {
    // It never reads: its read side ends with EOF, and the core hears of it there.
    shutdown(c.fd, SHUT_RDWR);
    return;
  }
  rdv::append_frame(r, c.out);
  flush_rank(c);
}

void AgentServer::close_rank(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  c.closing = true;
  if (c.rd) event_del(c.rd);
  flush_rank(c);
}

void AgentServer::to_daemon(const proto::Request& r) {
  if (daemon_fd_ < 0) return;
  rdv::append_frame(r, daemon_out_);
  if (!flush(daemon_fd_, daemon_out_, daemon_out_pos_, daemon_wr_))
    core_.on_daemon_lost("cannot write to the step's daemon");
}

}  // namespace dp::agent
