#include "user_child.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dp::spank {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kChildPipeFd = 3;

}  // namespace

bool become_user(const UserIds& ids) {
  if (setgroups(1, &ids.gid) != 0 || setgid(ids.gid) != 0 || setuid(ids.uid) != 0) return false;
  uid_t r = 0, e = 0, s = 0;
  gid_t rg = 0, eg = 0, sg = 0;
  if (getresuid(&r, &e, &s) != 0 || r != ids.uid || e != ids.uid || s != ids.uid) return false;
  if (getresgid(&rg, &eg, &sg) != 0 || rg != ids.gid || eg != ids.gid || sg != ids.gid)
    return false;
  if (ids.uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) return false;
  return true;
}

namespace {

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void child_main(int pipe_fd, const UserIds& ids,
                             const std::function<Result<std::string>()>& work) {
  // Only the pipe stays: slurmstepd's own connections are none of the child's business.
  if (dup2(pipe_fd, kChildPipeFd) < 0) _exit(3);
  close_range(kChildPipeFd + 1, ~0U, 0);
  // A copy of slurmstepd's memory: the user must not read it (ptrace, /proc/<pid>/mem).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);
  std::string out;
  if (!become_user(ids)) {
    out = "Ecannot become uid " + std::to_string(ids.uid) + "/gid " + std::to_string(ids.gid);
  } else {
    try {
      auto r = work();
      out = r ? "V" + *r : "E" + r.error().message;
    } catch (...) {
      out = "Einternal error in the unprivileged helper";
    }
  }
  if (out.size() > kMaxChildAnswer) out.resize(kMaxChildAnswer);
  write_all(kChildPipeFd, out);
  _exit(0);
}

// Reaps the child; one that closed its pipe is exiting and gets a moment,
// one past its deadline is killed at once.
void reap(pid_t pid, bool kill_now) {
  for (int i = 0; !kill_now && i < 200; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) != 0) return;  // reaped (or someone else did)
    usleep(1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

Result<std::string> run_as_user(const UserIds& ids, std::chrono::milliseconds deadline_in,
                                const std::function<Result<std::string>()>& work) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return make_error(Errc::internal,
                      std::string("pipe for the unprivileged helper: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(p[0]);
    close(p[1]);
    return make_error(Errc::internal,
                      std::string("cannot fork the unprivileged helper: ") + std::strerror(e));
  }
  if (pid == 0) {
    close(p[0]);
    child_main(p[1], ids, work);
  }
  close(p[1]);
  auto got = read_answer(p[0], Clock::now() + deadline_in, deadline_in, "the unprivileged helper");
  close(p[0]);
  // An answer in full means the child is exiting: it gets a moment; else it is killed.
  reap(pid, !got);
  if (!got) return got.error();
  if (got->empty())
    return make_error(Errc::internal, "the unprivileged helper ended without an answer");
  if ((*got)[0] == 'V') return got->substr(1);
  return make_error(Errc::unavailable, got->substr(1));
}

Result<std::string> read_answer(int fd, Clock::time_point deadline,
                                std::chrono::milliseconds allowed, const std::string& who) {
  std::string got;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return make_error(Errc::timeout,
                        who + " gave no answer within " + std::to_string(allowed.count()) + " ms");
    pollfd pf{fd, POLLIN, 0};
    const int pr = poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1'000'000)));
    if (pr <= 0) continue;  // EINTR or the deadline: checked above
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return got;  // EOF: the whole answer is in
    got.append(buf, static_cast<size_t>(n));
    if (got.size() > kMaxChildAnswer)
      return make_error(Errc::protocol,
                        who + " answered more than " + std::to_string(kMaxChildAnswer) + " bytes");
  }
}

std::string sanitize(std::string_view text, size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max));
  for (char c : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

}  // namespace dp::spank
