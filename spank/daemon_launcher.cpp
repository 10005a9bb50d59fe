#include "daemon_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "dp/hex.hpp"
#include "dp/params.hpp"
#include "dp/random_bytes.hpp"
#include "dp/sys_error.hpp"
#include "spawn.hpp"

namespace dp::spank {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kNoticeFd = 3;

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<char*>& argv, int in_fd, int out_fd,
                             bool show_stderr, pid_t parent) {
  // Die with srun: the daemon must never outlive the step.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  // Out of srun's process group and terminal: a Ctrl-C (srun's own "one more
  // within 1 sec"), Ctrl-Z or hang-up is srun's to handle, never the daemon's.
  setsid();
  // srun blocks and ignores signals; exec keeps both, so reset them.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM})
    signal(s, SIG_DFL);
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0) _exit(126);
  // srun's own stderr, always: the notices the user must see (a hang named).
  if (dup2(2, kNoticeFd) < 0) close(kNoticeFd);  // srun without stderr: notices go nowhere
  if (!show_stderr) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
  }
  // Keep srun's sockets and the tasks' I/O out of the daemon.
  close_range(kNoticeFd + 1, ~0U, 0);
  execv(argv[0], argv.data());
  const char msg[] = "ERROR cannot execute the daemon\n";
  ssize_t ignored = write(1, msg, sizeof msg - 1);
  (void)ignored;
  _exit(127);
}

// Reads one line from fd within the deadline.
Result<std::string> read_line(int fd, Clock::time_point deadline) {
  std::string line;
  char buf[256];
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return make_error(Errc::timeout, "no answer");
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return make_error(Errc::connection,
                        line.empty() ? "exited without answering" : "answer cut short: " + line);
    line.append(buf, static_cast<size_t>(n));
    if (line.size() > 4096) break;
  }
  return line.substr(0, line.find('\n'));
}

}  // namespace

Result<std::string> make_secret() {
  auto raw = random_bytes(32);
  DP_TRY(raw);
  auto hex = to_hex({reinterpret_cast<const unsigned char*>(raw->data()), raw->size()});
  std::fill(raw->begin(), raw->end(), '\0');
  return hex;
}

Result<StartingDaemon> start_daemon(const DaemonLaunch& req, const std::string& secret) {
  if (access(req.path.c_str(), X_OK) != 0)
    return make_error(Errc::unavailable, "rendezvous daemon " + req.path + " is not executable (" +
                                             dp::errno_text() +
                                             "); ask the site to install it or set daemon= "
                                             "in plugstack.conf");
  // The address to listen on follows the secret on stdin: srun learns the
  // route to the master node while the daemon starts (send_listen_address).
  dp::daemon::LaunchArgs la = req.args;
  la.notice_fd = kNoticeFd;
  std::vector<std::string> args = dp::daemon::format_arguments(la);
  args.insert(args.begin(), req.path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  auto child = spawn_piped([&](int in_fd, int out_fd, pid_t parent) {
    exec_child(argv, in_fd, out_fd, req.show_stderr, parent);
  });
  if (!child) return child.error();
  // The secret travels through the pipe only (a pipe holds 64 KiB, so this
  // never blocks); a daemon that died early must not kill srun with SIGPIPE.
  std::string line = secret + "\n";
  sighandler_t old = signal(SIGPIPE, SIG_IGN);
  ssize_t w = write(child->input.get(), line.data(), line.size());
  signal(SIGPIPE, old);
  std::fill(line.begin(), line.end(), '\0');
  StartingDaemon d{child->pid, std::move(child->answer), req.path, std::move(child->input)};
  if (w != static_cast<ssize_t>(secret.size() + 1)) {
    abandon_daemon(d);
    return make_error(Errc::unavailable, "rendezvous daemon " + req.path +
                                             ": could not receive the secret; rerun with "
                                             "--dp-verbose to see its messages");
  }
  return d;
}

void send_listen_address(StartingDaemon& d, const std::string& address,
                         const std::vector<std::string>& node_addresses) {
  if (!d.input) return;
  const std::string text = dp::daemon::format_addresses(address, node_addresses);
  // A daemon that already failed closed its stdin: its answer says why. The
  // daemon reads while it starts, so a list beyond the pipe's 64 KiB drains.
  sighandler_t old = signal(SIGPIPE, SIG_IGN);
  for (size_t off = 0; off < text.size();) {
    const ssize_t w = write(d.input.get(), text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  signal(SIGPIPE, old);
  d.input.reset();
}

void abandon_daemon(StartingDaemon& d) {
  d.input.reset();
  d.answer.reset();
  stop_daemon(d.pid, 500);
  d.pid = -1;
}

Result<RunningDaemon> await_daemon(StartingDaemon& d, int timeout_ms) {
  d.input.reset();  // no address sent: the daemon answers why it cannot start
  auto answer = read_line(d.answer.get(), Clock::now() + std::chrono::milliseconds(timeout_ms));
  d.answer.reset();
  auto fail = [&](const std::string& why) -> Result<RunningDaemon> {
    abandon_daemon(d);
    return make_error(Errc::unavailable, "rendezvous daemon " + d.path + ": " + why +
                                             "; rerun with --dp-verbose to see its messages");
  };
  if (!answer) return fail(answer.error().message);
  auto parsed = dp::daemon::parse_answer(*answer);
  if (!parsed) return fail(parsed.error().message);
  return RunningDaemon{d.pid, parsed->port, std::move(parsed->report_socket)};
}

Result<RunningDaemon> launch_daemon(const DaemonLaunch& req, const std::string& secret,
                                    const std::string& listen_address,
                                    const std::vector<std::string>& node_addresses) {
  auto d = start_daemon(req, secret);
  DP_TRY(d);
  send_listen_address(*d, listen_address, node_addresses);
  return await_daemon(*d, req.ready_timeout_ms);
}

void stop_daemon(pid_t pid, int grace_ms) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::milliseconds(grace_ms);
  while (true) {
    pid_t r = waitpid(pid, nullptr, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return;
    if (Clock::now() >= deadline) break;
    usleep(2'000);  // bounded by the deadline above; waitpid has no timeout
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace dp::spank
