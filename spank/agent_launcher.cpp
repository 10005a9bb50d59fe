#include "agent_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "dp/shown_value.hpp"
#include "dp/step_signals.hpp"
#include "dp/sys_error.hpp"
#include "spawn.hpp"

namespace dp::spank {
namespace {

using Clock = std::chrono::steady_clock;

// waitid's P_PIDFD (Linux 5.4), which older C libraries do not name.
constexpr int kWaitPidfd = 3;

// The job's ids go into the agent's environment (not secret): admins and
// tests tell one job's agents from another's as they do its tasks'.
struct AgentEnv {
  char job[32], step[32];
  AgentEnv(uint32_t job_id, uint32_t step_id) {
    std::snprintf(job, sizeof job, "SLURM_JOB_ID=%u", job_id);
    std::snprintf(step, sizeof step, "SLURM_STEP_ID=%u", step_id);
  }
};

// The descriptors the agent inherits besides its pipes: the held ports'
// sockets, which go to 3, 4, ... (launch_contract.hpp, held_ports).
struct Inherited {
  const int* fds = nullptr;
  unsigned count = 0;
};

// In the forked child: only the pipes, the held ports, the job's ids, then
// exec. No allocation here: slurmstepd has threads.
[[noreturn]] void exec_agent(const char* path, int in_fd, int out_fd, Inherited held,
                             const UserIds& ids, AgentEnv& env, pid_t parent) {
  // Copies above their places first (F_DUPFD never takes a used number),
  // so moving them to 3, 4, ... clobbers nothing still needed.
  int moved[agent::kMaxHeldPorts];
  if (held.count > agent::kMaxHeldPorts) _exit(126);
  for (unsigned i = 0; i < held.count; ++i)
    if ((moved[i] = fcntl(held.fds[i], F_DUPFD, 3 + static_cast<int>(held.count))) < 0) _exit(126);
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0) _exit(126);
  const int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, 2);
  for (unsigned i = 0; i < held.count; ++i)
    if (dup2(moved[i], 3 + static_cast<int>(i)) < 0) _exit(126);  // not close-on-exec
  close_range(3 + held.count, ~0U, 0);
  if (!become_user(ids)) _exit(125);
  // After setuid: a change of credentials clears the parent-death signal.
  // SIGKILL: the agent ignores SIGTERM (the step's signals are for the tasks).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Slurm's step signals (scancel, --signal, srun's Ctrl-C) ignored from
  // here through exec, so one racing the start cannot take the agent before
  // its own main() records them; the others as the default.
  for (int s = 1; s < NSIG; ++s) signal(s, is_step_signal(s) ? SIG_IGN : SIG_DFL);
  char* argv[] = {const_cast<char*>(path), nullptr};
  char* envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), env.job, env.step, nullptr};
  execve(path, argv, envp);
  const char msg[] = "ERROR cannot execute dp-nodeagent\n";
  [[maybe_unused]] const ssize_t n = write(1, msg, sizeof msg - 1);
  _exit(127);
}

}  // namespace

std::string agent_path_beside(const std::string& daemon_path) {
  const size_t slash = daemon_path.rfind('/');
  return (slash == std::string::npos ? std::string() : daemon_path.substr(0, slash + 1)) +
         "dp-nodeagent";
}

Result<agent::AgentAnswer> start_agent(const std::string& path, const UserIds& ids,
                                       const agent::AgentSettings& settings,
                                       std::chrono::milliseconds wait, NodeAgent& agent,
                                       const std::vector<int>& held_fds) {
  if (access(path.c_str(), X_OK) != 0)
    return make_error(Errc::unavailable, "node agent " + path + " is not executable (" +
                                             dp::errno_text() +
                                             "); it is installed beside dp-rendezvousd");
  if (held_fds.size() != settings.held_ports.size() || held_fds.size() > agent::kMaxHeldPorts)
    return make_error(Errc::internal, "the held ports and their sockets do not match");
  AgentEnv env(settings.job, settings.step);
  const Inherited held{held_fds.data(), static_cast<unsigned>(held_fds.size())};
  auto child = spawn_piped([&](int in_fd, int out_fd, pid_t parent) {
    exec_agent(path.c_str(), in_fd, out_fd, held, ids, env, parent);
  });
  if (!child) return child.error();
  NodeAgent a;
  // Our child, not yet reaped by anyone: its pid is still its own.
  a.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, child->pid, 0)));
  if (!a.pidfd)  // the pipes close on return: the agent reads no settings and exits
    return make_error(Errc::unavailable, std::string("cannot pin the node agent (pidfd_open: ") +
                                             dp::errno_text() +
                                             "); slurm-dp needs Linux 5.3 or later");
  a.control = std::move(child->input);
  // Never blocks on the user's process: a fresh pipe holds 64 KiB, the
  // settings are a few hundred bytes, and a full pipe drops what is left.
  fcntl(a.control.get(), F_SETFL, O_NONBLOCK);
  std::string text = agent::format_settings(settings);
  const ssize_t w = write(a.control.get(), text.data(), text.size());
  std::fill(text.begin(), text.end(), '\0');
  auto answer = read_answer(child->answer.get(), Clock::now() + wait, wait, "the node agent");
  child->answer.reset();
  Result<agent::AgentAnswer> parsed =
      make_error(Errc::internal, "could not give the node agent its settings");
  if (!answer) {
    parsed = answer.error();
  } else if (w == static_cast<ssize_t>(text.size())) {
    parsed = agent::parse_answer(answer->substr(0, answer->find('\n')));
  }
  if (parsed && !parsed->refusal.empty()) {
    // The agent answered why (the master node's failure, say) and stays: it
    // reports how the node's tasks end, so the first failure names a cause.
    agent = std::move(a);
    return make_error(Errc::unavailable, shown_value(parsed->refusal, 512));
  }
  if (!parsed) {
    stop_agent(a, 0);
    return wrap_error(parsed.error(), shown_value(parsed.error().message, 512));
  }
  agent = std::move(a);
  return parsed;
}

namespace {
void tell(const NodeAgent& agent, const std::string& line) {
  if (!agent.control) return;
  sighandler_t old = signal(SIGPIPE, SIG_IGN);
  [[maybe_unused]] const ssize_t n = write(agent.control.get(), line.data(), line.size());
  signal(SIGPIPE, old);
}
}  // namespace

void tell_task_start(const NodeAgent& agent, const agent::TaskStart& task) {
  tell(agent, agent::format_task_start(task));
}

void tell_task_exit(const NodeAgent& agent, int rank, int wait_status) {
  tell(agent, agent::format_task_exit(rank, wait_status));
}

void stop_agent(NodeAgent& agent, int grace_ms) {
  // A stopped agent (the user's kill -STOP, a debugger) wakes to read its
  // tasks' exits and say the node's goodbye: killed while stopped, it would
  // be a lost node to the daemon although every task ended well.
  if (agent.pidfd) syscall(SYS_pidfd_send_signal, agent.pidfd.get(), SIGCONT, nullptr, 0);
  tell(agent, std::string(agent::kStepEndLine) + "\n");
  agent.control.reset();
  if (!agent.pidfd) return;
  pollfd p{agent.pidfd.get(), POLLIN, 0};  // readable once the process has exited
  if (grace_ms <= 0 || poll(&p, 1, grace_ms) <= 0) {
    syscall(SYS_pidfd_send_signal, agent.pidfd.get(), SIGKILL, nullptr, 0);
    poll(&p, 1, 1'000);
  }
  // slurmstepd may have reaped it already (ECHILD); otherwise no zombie stays.
  siginfo_t info{};
  while (waitid(static_cast<idtype_t>(kWaitPidfd), static_cast<id_t>(agent.pidfd.get()), &info,
                WEXITED | WNOHANG) < 0 &&
         errno == EINTR) {
  }
  agent.pidfd.reset();
}

}  // namespace dp::spank
