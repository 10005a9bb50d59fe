#include "report_socket.hpp"

#include <event2/event.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "dp/sys_error.hpp"
#include "dp/unix_socket.hpp"

namespace dp::daemon {
namespace {

constexpr size_t kMaxConns = 16;
// Longer than a stacks round (2 s) so its answer finds the connection still there.
constexpr int kReadTimeoutS = 4;
constexpr int kWriteTimeoutMs = 500;  // the reader is the user's own dp-top or srun

}  // namespace

Result<std::unique_ptr<ReportSocket>> ReportSocket::create(event_base* base, std::string path,
                                                           Answer answer, AskStacks ask_stacks) {
  std::unique_ptr<ReportSocket> s(new ReportSocket());
  s->base_ = base;
  s->answer_ = std::move(answer);
  s->ask_stacks_ = std::move(ask_stacks);
  // "@name": abstract (no file; the peer's uid is all that guards it, both ways).
  auto addr = unix_address(path);
  DP_TRY(addr);
  service::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) return sys_error(Errc::connection, "socket");
  if (!addr->abstract())
    ::unlink(path.c_str());  // a stale socket of an earlier daemon of this step
  const mode_t old = umask(077);
  const int rc = bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr->sa), addr->len);
  umask(old);
  if (rc != 0 || listen(fd.get(), 16) != 0)
    return sys_error(Errc::connection, "cannot listen on " + path);
  s->path_ = std::move(path);
  ReportSocket* self = s.get();
  // From here on the destructor removes the path.
  DP_TRY(s->listener_.start(base, std::move(fd), static_cast<int>(kMaxConns), "dp-rendezvousd",
                            [self](service::UniqueFd c) { self->admit(std::move(c)); }));
  return s;
}

ReportSocket::~ReportSocket() {
  if (listener_.fd() >= 0 && !path_.empty() && path_[0] != '@') ::unlink(path_.c_str());
}

void ReportSocket::admit(service::UniqueFd fd) {
  const auto uid = peer_uid(fd.get());
  const bool ours = uid && (*uid == getuid() || *uid == 0);
  if (!ours || conns_.size() >= kMaxConns) return;
  auto c = std::make_unique<Conn>();
  c->owner = this;
  c->serial = next_serial_++;
  const timeval tv{kReadTimeoutS, 0};
  c->ev =
      service::watch(base_, fd.get(), EV_READ | EV_PERSIST, &ReportSocket::on_read, c.get(), &tv);
  if (!c->ev) return;
  c->fd = std::move(fd);
  const int key = c->fd.get();
  conns_.emplace(key, std::move(c));
}

void ReportSocket::on_read(evutil_socket_t, short what, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  ReportSocket* s = c->owner;
  if (what & EV_TIMEOUT) return s->drop(c->fd.get());
  char buf[4096];
  const ssize_t n = ::recv(c->fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) return s->drop(c->fd.get());
  if (c->asked) return;  // one request per connection; its answer is on the way
  c->dec.feed(buf, static_cast<size_t>(n));
  s->serve(*c);
}

void ReportSocket::serve(Conn& c) {
  std::string_view payload;
  const auto st = c.dec.next(payload);
  if (st == rdv::FrameDecoder::Status::need_more) return;
  const int fd = c.fd.get();
  proto::Request req;
  proto::Response r;
  const bool parsed = st == rdv::FrameDecoder::Status::frame &&
                      req.ParseFromArray(payload.data(), static_cast<int>(payload.size()));
  if (parsed && req.op_case() == proto::Request::kStacks && ask_stacks_)
    return ask_stacks(c, req.id());
  if (!parsed || req.op_case() != proto::Request::kStats) {
    r.set_code(proto::PROTOCOL);
    r.set_message("this socket answers only a stats or stacks request (the step report)");
  } else {
    r.set_id(req.id());
    *r.mutable_stats() = answer_();
  }
  reply(fd, r);
}

// The answer comes once the node agents have read their ranks: the
// connection waits (reads ignored) and is found again by fd and serial.
void ReportSocket::ask_stacks(Conn& c, uint64_t request_id) {
  c.asked = true;
  std::weak_ptr<ReportSocket*> weak = self_;
  const int fd = c.fd.get();
  const uint64_t serial = c.serial;
  ask_stacks_([weak, fd, serial, request_id](std::vector<std::string> lines) {
    const auto self = weak.lock();
    if (!self) return;
    ReportSocket* s = *self;
    const auto it = s->conns_.find(fd);
    if (it == s->conns_.end() || it->second->serial != serial) return;  // dp-top left
    proto::Response r;
    r.set_id(request_id);
    for (auto& l : lines) r.mutable_stacks_view()->add_lines(std::move(l));
    s->reply(fd, r);
  });
}

// Small answers to the user's own reader: written within a short bound, then closed.
void ReportSocket::reply(int fd, const proto::Response& r) {
  std::string out;
  rdv::append_frame(r, out);
  size_t off = 0;
  while (off < out.size()) {
    const ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, kWriteTimeoutMs) > 0) continue;
    }
    break;
  }
  drop(fd);
}

void ReportSocket::drop(int fd) { conns_.erase(fd); }

}  // namespace dp::daemon
