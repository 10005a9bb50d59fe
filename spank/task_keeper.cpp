#include "task_keeper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "dp/proc_stat.hpp"
#include "dp/step_signals.hpp"
#include "dp/sys_error.hpp"
#include "dp/unique_fd.hpp"
#include "keeper_contract.hpp"
#include "keeper_phase.hpp"
#include "unix_connect.hpp"  // dp_sockets

namespace dp::spank {
namespace {

using Clock = std::chrono::steady_clock;
using agent::KeeperLine;

// The handler's pipe: a signal and its sender, read by the keeper's loop.
int g_signal_write = -1;
struct SignalNote {
  int sig;
  pid_t from;
};

void note_signal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  const SignalNote n{sig, info != nullptr ? info->si_pid : 0};
  [[maybe_unused]] const ssize_t w = ::write(g_signal_write, &n, sizeof n);
  errno = saved;
}

// What the program's process must find as slurmstepd left it: every
// disposition and the mask, before the keeper changed them.
struct SignalState {
  struct sigaction act[NSIG];
  sigset_t mask;
};

void save_signals(SignalState& s) {
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, nullptr, &s.act[sig]);
  sigprocmask(SIG_SETMASK, nullptr, &s.mask);
}

void restore_signals(const SignalState& s) {
  for (int sig = 1; sig < NSIG; ++sig)
    if (is_step_signal(sig)) sigaction(sig, &s.act[sig], nullptr);
  sigprocmask(SIG_SETMASK, &s.mask, nullptr);
}

// The task process was slurmstepd a moment ago and never execs: its
// descriptors a exec would have closed are closed now (a pipe of another
// task's output must not wait for this one), as are never its 0-2.
void close_exec_descriptors() {
  std::vector<int> fds;
  {
    UniqueDir d("/proc/self/fd");
    while (const dirent* e = d ? d.next() : nullptr) {
      const int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != d.fd() && (fcntl(fd, F_GETFD) & FD_CLOEXEC)) fds.push_back(fd);
    }
  }
  for (int fd : fds) ::close(fd);
}

[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};  // the program dumped its own core, if any
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    std::_Exit(128 + sig);
  }
  std::_Exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// How long a keeper tries to reach its node agent (up at the task's fork;
// a flood of connections on its socket only delays it).
constexpr auto kConnectFor = std::chrono::seconds(10);
constexpr auto kConnectEvery = std::chrono::milliseconds(50);
// While a program stops, its tree is looked at this often: a grandchild's
// end wakes no one.
constexpr int kStoppingPollMs = 50;

class Keeper {
 public:
  Keeper(const KeeperPlan& plan, UniqueFd signals) : plan_(plan), signals_(std::move(signals)) {}
  Result<void> connect();
  // Runs the keeper; true only in a newly forked program's process.
  bool run(const SignalState& saved);

 private:
  bool start(int node_rank, int count, const SignalState& saved);
  void on_signals();
  void reap();
  void program_ended(int status);
  // The phase after `e`; the keeper ends here if the rule says so.
  void step(KeeperEvent e);
  void stop(std::chrono::milliseconds grace);
  void check_stopped();
  void on_agent(const KeeperLine& l, bool& forked, const SignalState& saved);
  bool read_agent(bool& forked, const SignalState& saved);
  void say(const KeeperLine& l);
  // Ends as its program's last end did; nothing the program started
  // outlives it (a generation ends whole).
  [[noreturn]] void finish() { finish_as(last_status_); }
  [[noreturn]] void finish_as(int status);

  const KeeperPlan& plan_;
  UniqueFd signals_;
  UniqueFd agent_;
  std::string in_;
  pid_t child_ = -1;
  UniqueFd child_fd_;  // a pidfd: readable once the program ended
  int last_status_ = 0;
  KeeperPhase phase_ = KeeperPhase::idle;
  std::optional<Clock::time_point> kill_at_;  // while stopping: SIGKILL to the tree then
};

// The agent, tried until kConnectFor: a keeper without it would be a plain
// task whose end the daemon takes for a lost node, so the task fails instead.
Result<void> Keeper::connect() {
  const auto until = Clock::now() + kConnectFor;
  for (;;) {
    auto fd = rdv::unix_connect_once(plan_.socket);
    if (fd) {
      agent_.reset(*fd);
      break;
    }
    if (Clock::now() >= until) {
      return make_error(Errc::connection,
                        "local task " + std::to_string(plan_.local) +
                            " cannot reach its node agent's keeper socket within " +
                            std::to_string(std::chrono::seconds(kConnectFor).count()) + " s (" +
                            fd.error().message + "); it fails rather than run without its keeper");
    }
    std::this_thread::sleep_for(kConnectEvery);
  }
  const int flags = fcntl(agent_.get(), F_GETFL);
  fcntl(agent_.get(), F_SETFL, flags & ~O_NONBLOCK);
  say({KeeperLine::Kind::keeper, plan_.local, getpid()});
  return {};
}

void Keeper::say(const KeeperLine& l) {
  if (!agent_) return;
  const std::string line = agent::format_keeper_line(l);
  if (::send(agent_.get(), line.data(), line.size(), MSG_NOSIGNAL) != ssize_t(line.size()))
    agent_.reset();
}

// The program's process returns true from here and goes on to exec.
bool Keeper::start(int node_rank, int count, const SignalState& saved) {
  if (phase_ != KeeperPhase::idle) {  // an order that crossed the first start, or a stop's end
    if (child_ > 0) {
      say({KeeperLine::Kind::started, child_,
           static_cast<long long>(::dp::read_start_ticks(child_).value_or(0))});
    }
    return false;
  }
  if (auto ok = plan_.prepare(node_rank, count); !ok) {
    std::fprintf(stderr, "slurm-dp: task keeper: %s\n", ok.error().message.c_str());
    last_status_ = 1 << 8;  // exited 1
    say({KeeperLine::Kind::exited, last_status_});
    return false;
  }
  const pid_t keeper = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    agent_.reset();
    signals_.reset();
    child_fd_.reset();
    restore_signals(saved);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != keeper) std::_Exit(1);
    return true;
  }
  if (pid < 0) {
    last_status_ = 1 << 8;
    say({KeeperLine::Kind::exited, last_status_});
    return false;
  }
  child_ = pid;
  child_fd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  step(KeeperEvent::started);
  say({KeeperLine::Kind::started, pid,
       static_cast<long long>(::dp::read_start_ticks(pid).value_or(0))});
  return false;
}

void Keeper::on_signals() {
  SignalNote n{};
  while (::read(signals_.get(), &n, sizeof n) == sizeof n) {
    if (n.sig == SIGCHLD) continue;  // a wake-up: reap() looks
    // Slurm's (from slurmstepd, the task's parent) reached the program as
    // well; anyone else's was meant for the task's pid, the program.
    if (child_ > 0) {
      if (n.from != getppid()) kill(child_, n.sig);
    } else if (signal_ends_step(n.sig)) {
      finish_as(n.sig & 0x7f);  // a wait status of "killed by n.sig": as a bare task dies of it
    }
  }
}

// Every child that ended: the program, and what it left behind that came
// to the keeper (its subreaper) when its parent ended.
void Keeper::reap() {
  int status = 0;
  for (pid_t pid; (pid = waitpid(-1, &status, WNOHANG)) > 0;)
    if (pid == child_) program_ended(status);
}

void Keeper::program_ended(int status) {
  child_ = -1;
  child_fd_.reset();
  last_status_ = status;
  say({KeeperLine::Kind::exited, status});
  step(KeeperEvent::program_ended);
}

void Keeper::step(KeeperEvent e) {
  const KeeperStep next = keeper_step(phase_, e, static_cast<bool>(agent_));
  phase_ = next.phase;
  if (!stopping(phase_)) kill_at_.reset();
  if (next.end_keeper) {
    // Lost with its program still running (not told to exit): it is killed.
    finish_as(e == KeeperEvent::agent_lost && child_ > 0 && last_status_ == 0 ? SIGKILL
                                                                              : last_status_);
  }
}

// SIGTERM to the program's whole tree (a program behind a shell, its
// DataLoader's workers, what it double-forked), SIGKILL to all of it after
// the grace; "stopped" once none of it is left.
void Keeper::stop(std::chrono::milliseconds grace) {
  step(KeeperEvent::stop_ordered);
  signal_descendants(getpid(), SIGTERM);
  signal_descendants(getpid(), SIGCONT);  // a stopped process sees its SIGTERM only once continued
  kill_at_ = Clock::now() + grace;
  check_stopped();
}

void Keeper::check_stopped() {
  if (!stopping(phase_)) return;
  if (kill_at_ && Clock::now() >= *kill_at_) {
    kill_descendants(getpid());
    kill_at_.reset();
  }
  reap();
  if (child_ > 0 || !descendants(getpid()).empty()) return;
  say({KeeperLine::Kind::stopped});
  step(KeeperEvent::tree_gone);
}

void Keeper::on_agent(const KeeperLine& l, bool& forked, const SignalState& saved) {
  switch (l.kind) {
    case KeeperLine::Kind::start:
      forked = start(static_cast<int>(l.a), static_cast<int>(l.b), saved);
      return;
    case KeeperLine::Kind::stop: return stop(std::chrono::milliseconds(l.a));
    case KeeperLine::Kind::fence: return stop(std::chrono::milliseconds(0));
    case KeeperLine::Kind::exit: return step(KeeperEvent::exit_ordered);
    case KeeperLine::Kind::keeper:  // the keeper's own lines, never the agent's
    case KeeperLine::Kind::started:
    case KeeperLine::Kind::exited:
    case KeeperLine::Kind::stopped: return;
  }
}

bool Keeper::read_agent(bool& forked, const SignalState& saved) {
  char buf[256];
  const ssize_t n = ::recv(agent_.get(), buf, sizeof buf, 0);
  if (n <= 0) {
    agent_.reset();
    // The agent is gone, so is the step on this node: nothing of its
    // program may run on unseen (a spare takes its place). A program told
    // to exit (its goodbye said) is waited for.
    step(KeeperEvent::agent_lost);
    return false;
  }
  in_.append(buf, static_cast<size_t>(n));
  for (size_t nl; !forked && (nl = in_.find('\n')) != std::string::npos;) {
    const auto line = agent::parse_keeper_line(std::string_view(in_).substr(0, nl));
    in_.erase(0, nl + 1);
    if (line) on_agent(*line, forked, saved);
  }
  return forked;
}

// The agent's first word (its answer to "keeper") says whether and as
// which node rank to start, with the step's restart count now: a keeper
// that comes late starts as the others run, not as they started.
bool Keeper::run(const SignalState& saved) {
  for (;;) {
    pollfd p[3] = {
        {signals_.get(), POLLIN, 0}, {agent_.get(), POLLIN, 0}, {child_fd_.get(), POLLIN, 0}};
    // Without a pidfd (a kernel before 5.3) the program's end is polled for;
    // while it stops, its tree.
    int timeout = (child_ > 0 && !child_fd_) || stopping(phase_) ? kStoppingPollMs : -1;
    if (::poll(p, 3, timeout) < 0 && errno != EINTR) finish();
    if (p[0].revents) on_signals();
    reap();
    check_stopped();
    bool forked = false;
    if (p[1].revents && agent_ && read_agent(forked, saved)) return true;
  }
}

// The keeper's own handling of the step's signals, recorded with their sender.
Result<UniqueFd> install_signal_notes() {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
    return make_error(Errc::internal, std::string("pipe2: ") + dp::errno_text());
  UniqueFd read_end(fds[0]);
  g_signal_write = fds[1];
  struct sigaction sa {};
  sa.sa_sigaction = note_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigset_t steps;
  sigemptyset(&steps);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (!is_step_signal(sig) && sig != SIGCHLD) continue;
    sigaction(sig, &sa, nullptr);
    sigaddset(&steps, sig);
  }
  sigprocmask(SIG_UNBLOCK, &steps, nullptr);
  return read_end;
}

void Keeper::finish_as(int status) {
  kill_descendants(getpid());
  reap();
  end_as(status);
}

}  // namespace

int keep_task(const KeeperPlan& plan) {
  SignalState saved;
  save_signals(saved);
  // ps and a test walking up from the program tell the keeper from slurmstepd.
  prctl(PR_SET_NAME, "dp-task-keeper");
  // What the program leaves when its parent ends (a shell's python, a
  // daemon it double-forked) comes to the keeper, which ends it with the
  // rest of its generation.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  close_exec_descriptors();
  auto signals = install_signal_notes();
  if (!signals) {
    std::fprintf(stderr, "slurm-dp: task keeper: %s\n", signals.error().message.c_str());
    return -1;
  }
  Keeper keeper(plan, std::move(*signals));
  if (auto ok = keeper.connect(); !ok) {
    std::fprintf(stderr, "slurm-dp: task keeper: %s\n", ok.error().message.c_str());
    return -1;
  }
  if (keeper.run(saved)) return 0;  // the program's process
  std::_Exit(1);                    // not reached: the keeper ends as its program did
}

}  // namespace dp::spank
