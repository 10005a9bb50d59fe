#include "step_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "dp/shown_value.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "dp/unix_socket.hpp"
#include "dp/user_text.hpp"
#include "frame_codec.hpp"

namespace dp::obs {
namespace {

// A daemon's error answer as shown: one line, at most this many bytes of it.
constexpr size_t kShownErrorChars = 1024;

uint32_t fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

}  // namespace

namespace {

// dir, made 0700 with create; refused naming its owner when it is not a
// folder of the user's own open to nobody else.
Result<std::string> own_dir(const std::string& dir, bool create, const char* who_fixes) {
  const uid_t uid = getuid();
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return make_error(Errc::unavailable, "cannot create " + dir + ": " + errno_text(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    return make_error(Errc::not_found,
                      dir + " does not exist: no step of yours has run on this host");
  }
  if (st.st_uid != uid) {
    return make_error(Errc::unauthorized, dir + " belongs to " + user_text(st.st_uid) +
                                              ", not to you: " + who_fixes +
                                              " must remove it; until then slurm-dp answers on "
                                              "an abstract socket");
  }
  if (!S_ISDIR(st.st_mode) || (st.st_mode & 077) != 0) {
    return make_error(Errc::unauthorized,
                      dir +
                          " is not a folder with mode 0700 (a link, or open to others): remove "
                          "it; slurm-dp recreates it");
  }
  return dir;
}

}  // namespace

Result<std::string> user_dir(bool create) {
  // $XDG_RUNTIME_DIR (systemd's /run/user/<uid>) is the user's alone: nobody
  // else can create anything in it first, as anyone can in /tmp.
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  if (xdg && xdg[0] == '/' && lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
      st.st_uid == getuid() && (st.st_mode & 077) == 0) {
    if (auto d = own_dir(std::string(xdg) + "/slurm-dp", create, "you")) return d;
  }
  return own_dir("/tmp/slurm-dp-" + std::to_string(getuid()), create, "an admin (root)");
}

std::string socket_name(const std::string& job, const std::string& step) {
  const char* conf = std::getenv("SLURM_CONF");
  char tag[16];
  std::snprintf(tag, sizeof tag, "%08x", fnv1a(conf && *conf ? conf : "/etc/slurm/slurm.conf"));
  return job + "." + step + "." + tag + ".sock";
}

Result<std::string> socket_path(const std::string& job, const std::string& step, bool create) {
  auto dir = user_dir(create);
  if (!dir) return dir.error();
  std::string p = *dir + "/" + socket_name(job, step);
  DP_TRY(unix_address(p));  // fits sun_path
  return p;
}

proto::Request stats_request() {
  proto::Request req;
  req.set_id(1);
  req.mutable_stats();
  return req;
}

Result<proto::Stats> query(const std::string& path, std::chrono::milliseconds timeout) {
  auto r = ask(path, stats_request(), timeout);
  if (!r) return r.error();
  return r->stats();
}

namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  return static_cast<int>(std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
}

// A connection to the daemon at `path`, served by `owner`'s process.
Result<UniqueFd> connect_owned(const std::string& path, Clock::time_point deadline,
                               std::chrono::milliseconds timeout, uid_t owner) {
  auto addr = unix_address(path);
  DP_TRY(addr);
  UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!sock) return make_error(Errc::connection, "socket: " + errno_text(errno));
  // Non-blocking, so a listener with a full backlog (EAGAIN) costs this
  // query's deadline, never a hang that not even SIGTERM ends.
  while (connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr->sa), addr->len) != 0) {
    const int e = errno;
    if (e == ENOENT || e == ECONNREFUSED)
      return make_error(Errc::not_found,
                        "no running step daemon at " + path + " (" + errno_text(e) + ")");
    if (e != EAGAIN && e != EINTR)
      return make_error(Errc::connection, "cannot connect to " + path + ": " + errno_text(e));
    if (ms_left(deadline) == 0)
      return make_error(Errc::timeout, path + " accepted no connection within " +
                                           std::to_string(timeout.count()) + " ms (backlog full)");
    poll(nullptr, 0, std::min(10, ms_left(deadline)));
  }
  // Anyone may bind an abstract name: ask only a daemon of the step's user.
  const auto uid = peer_uid(sock.get());
  if (!uid || *uid != owner)
    return make_error(Errc::unauthorized,
                      path + " is served by " + (uid ? user_text(*uid) : "an unknown user") +
                          ", not by a step daemon of " +
                          (owner == getuid() ? std::string("yours") : user_text(owner)) +
                          ": not asked");
  return sock;
}

// The first whole answer frame, or why none came by the deadline.
Result<proto::Response> read_answer(int fd, const std::string& path, Clock::time_point deadline,
                                    std::chrono::milliseconds timeout) {
  rdv::FrameDecoder dec(64u << 20);
  char buf[65536];
  while (true) {
    std::string_view payload;
    const auto st = dec.next(payload);
    if (st == rdv::FrameDecoder::Status::frame) {
      proto::Response r;
      if (!r.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
        return make_error(Errc::protocol, "malformed answer from " + path);
      // The daemon is the step owner's process: its text is shown escaped
      // (root's dp-top prints it), never as terminal control.
      if (r.code() != proto::OK) {
        auto e = rdv::error_from(r);
        return make_error(e.code, shown_value(e.message, kShownErrorChars));
      }
      return r;
    }
    if (st == rdv::FrameDecoder::Status::too_large)
      return make_error(Errc::limit, "answer from " + path + " too large");
    const int left = ms_left(deadline);
    if (left == 0)
      return make_error(Errc::timeout, "no answer from " + path + " within " +
                                           std::to_string(timeout.count()) + " ms");
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0)
      return make_error(Errc::connection,
                        "the daemon at " + path + " closed the connection without an answer");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return make_error(Errc::connection, "cannot read from " + path + ": " + errno_text(errno));
    }
    dec.feed(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<proto::Response> ask(const std::string& path, const proto::Request& req,
                            std::chrono::milliseconds timeout, uid_t owner) {
  const auto deadline = Clock::now() + timeout;
  auto sock = connect_owned(path, deadline, timeout, owner);
  DP_TRY(sock);
  std::string frame;
  rdv::append_frame(req, frame);
  // A request of a few bytes fits any fresh socket's buffer: one send.
  if (::send(sock->get(), frame.data(), frame.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(frame.size()))
    return make_error(Errc::connection, "cannot send to " + path + ": " + errno_text(errno));
  return read_answer(sock->get(), path, deadline, timeout);
}

}  // namespace dp::obs
