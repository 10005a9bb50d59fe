// AgentServer's connections: the node's ranks on the abstract socket, and
// the writes to the daemon.
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "agent_server.hpp"
#include "dp/unix_socket.hpp"

namespace dp::agent {

void AgentServer::admit(service::UniqueFd fd) {
  // An abstract name has no file mode: only this user's processes are served.
  auto uid = peer_uid(fd.get());
  if (!uid || *uid != getuid()) return;
  auto c = service::open_conn<Conn, &AgentServer::read_rank>(*this, base_.get(), std::move(fd),
                                                             next_id_++);
  if (!c) return;
  const ConnId id = c->id;
  conns_.emplace(id, std::move(c));
  core_.on_rank_connect(id, Clock::now());
}

void AgentServer::read_rank(Conn& c) {
  char buf[65536];
  const ConnId id = c.id;
  const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  const auto now = Clock::now();
  if (n > 0) c.decoder.feed(buf, static_cast<size_t>(n));
  while (conns_.count(id) && !c.closing) {
    c.decoder.set_max_frame_bytes(core_.max_frame_bytes(id));
    c.decoder.keep_oversized_heads();  // the core refuses by the request's id
    std::string_view payload;
    const auto st = c.decoder.next(payload);
    if (st == rdv::FrameDecoder::Status::need_more) break;
    if (st == rdv::FrameDecoder::Status::too_large) {
      if (!core_.on_rank_oversized(id, c.decoder.frame_length(), c.decoder.frame_head())) break;
      c.decoder.skip_frame();
      continue;
    }
    core_.on_rank_frame(id, payload, now);
  }
  if (!conns_.count(id) || c.closing) return;
  c.decoder.shrink_if_idle();
  if (n <= 0) {
    drain_signals();  // a rank ended by Slurm's signal: the core knows the signal first
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
  // Without a way to wait for room it cannot be served: it ends as a lost rank.
  if (!service::make_writer<&AgentServer::flush_rank>(c, base_.get()))
    shutdown(c.fd.get(), SHUT_RDWR);
  const bool alive = flush(c.fd.get(), c.out, c.out_pos, c.wr.get());
  // A closing connection goes once its last reply left (or could not).
  if (c.closing && (!alive || c.out.empty())) drop(c.id);
}

void AgentServer::drop(ConnId id) { conns_.erase(id); }

void AgentServer::to_rank(ConnId conn, const proto::Response& r) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.out.size() - c.out_pos > kMaxOutBytes) {
    // It never reads: its read side ends with EOF, and the core hears of it there.
    shutdown(c.fd.get(), SHUT_RDWR);
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
  if (c.rd) event_del(c.rd.get());
  flush_rank(c);
}

void AgentServer::to_daemon(const proto::Request& r) {
  if (!daemon_fd_) return;
  rdv::append_frame(r, daemon_out_);
  if (hold_daemon_writes_) return;
  if (!flush(daemon_fd_.get(), daemon_out_, daemon_out_pos_, daemon_wr_.get()))
    daemon_failed(errno, "cannot write to the step's daemon");
}

}  // namespace dp::agent
