// The step's ports' hold from set-up to rank 0's exec (step_port_hold.hpp),
// or shared with the job's user until its program listens,
// naming who holds a taken port from the kernel's tables read bounded
// (socket_tables.hpp), and root's end of the node agent, which never
// signals or reaps by pid (agent_launcher.hpp). Real sockets and processes.
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agent_launcher.hpp"
#include "dp/unique_fd.hpp"
#include "loopback.hpp"
#include "master_socket.hpp"
#include "port_lease.hpp"
#include "process_group.hpp"
#include "socket_tables.hpp"
#include "step_port_hold.hpp"

namespace {

using dp::UniqueFd;
using dp::test::bound_socket;
using dp::test::connect_loopback;
using Clock = std::chrono::steady_clock;

int port_of(int fd) {
  sockaddr_in6 a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin6_port);  // sin_port sits at the same offset
}

// A port of the OS's choice, held the way slurmstepd holds MASTER_PORT.
UniqueFd held_port(int& port) {
  UniqueFd fd = dp::spank::hold_port(0);
  port = fd ? port_of(fd.get()) : 0;
  return fd;
}

// The same, as the one port of a step's hold.
std::vector<dp::spank::HeldPort> held(int& port) {
  std::vector<dp::spank::HeldPort> v;
  UniqueFd fd = held_port(port);
  v.push_back({port, std::move(fd)});
  return v;
}

// A socket on `port` with SO_REUSEADDR (as servers bind) or without,
// listening or not.
UniqueFd reusing_socket(int port, bool listening, int reuse = 1) {
  return bound_socket(port, {reuse != 0, false, listening});
}

TEST(StepPortHold, SlurmstepdsCopyGoesWhenItLetsGo) {
  int port = 0;
  dp::spank::StepPortHold hold;
  ASSERT_TRUE(hold.keep(held(port)).ok());
  ASSERT_GT(port, 0);
  EXPECT_FALSE(dp::spank::port_binds(port)) << "held: not even SO_REUSEADDR binds it";
  hold.let_go_in_stepd();
  EXPECT_TRUE(dp::spank::port_binds(port));
  hold.let_go_in_stepd();  // once per task_post_fork: idempotent, no wait
  hold.stop();
}

// --dp-ports: the step's ports are held and let go together, each found by its port.
TEST(StepPortHold, EveryPortOfTheStepIsHeldAndLetGoTogether) {
  std::vector<dp::spank::HeldPort> ports;
  std::vector<int> numbers;
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    UniqueFd fd = held_port(port);
    ASSERT_TRUE(fd);
    numbers.push_back(port);
    ports.push_back({port, std::move(fd)});
  }
  ports.push_back({1, UniqueFd()});  // known, not held (TIME_WAIT)
  dp::spank::StepPortHold hold;
  ASSERT_TRUE(hold.keep(std::move(ports)).ok());
  for (int port : numbers) {
    EXPECT_GE(hold.fd(port), 0) << port;
    EXPECT_FALSE(dp::spank::port_binds(port)) << port;
  }
  EXPECT_EQ(hold.fd(1), -1);
  EXPECT_EQ(hold.fd(2), -1) << "not a port of the step";
  hold.let_go_in_stepd();
  for (int port : numbers) EXPECT_TRUE(dp::spank::port_binds(port)) << port;
  hold.stop();
}

int let_go_in_clone(void* hold) {
  static_cast<dp::spank::StepPortHold*>(hold)->let_go_in_stepd();
  return 0;
}

// SlurmdParameters=contain_spank: Slurm runs task_post_fork in a clone that
// shares slurmstepd's memory but has its own descriptor table, where a close
// would not reach slurmstepd's copy. The closer thread reaches it.
TEST(StepPortHold, ACloneWithItsOwnDescriptorTableLetsGoOfSlurmstepdsCopy) {
  int port = 0;
  dp::spank::StepPortHold hold;
  ASSERT_TRUE(hold.keep(held(port)).ok());
  std::vector<char> stack(256 * 1024);
  const pid_t pid = clone(let_go_in_clone, stack.data() + stack.size(), CLONE_VM | SIGCHLD, &hold);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(dp::spank::port_binds(port)) << "slurmstepd's own copy still holds the port";
}

// The tasks are forked with the hold: the port stays held until the last
// copy (rank 0's, at its exec) goes, after slurmstepd let go.
TEST(StepPortHold, AForkedTaskKeepsThePortUntilItDropsItsCopy) {
  int port = 0;
  dp::spank::StepPortHold hold;
  ASSERT_TRUE(hold.keep(held(port)).ok());
  auto go = dp::make_pipe(O_CLOEXEC);
  auto done = dp::make_pipe(O_CLOEXEC);
  ASSERT_TRUE(go.ok() && done.ok());
  const pid_t task = fork();
  if (task == 0) {
    char c;
    if (read(go->read.get(), &c, 1) != 1) _exit(1);
    hold.drop_task_copy();
    (void)!write(done->write.get(), "x", 1);
    pause();
    _exit(0);
  }
  ASSERT_GT(task, 0);
  hold.let_go_in_stepd();
  EXPECT_FALSE(dp::spank::port_binds(port)) << "the task's inherited copy holds it";
  ASSERT_EQ(write(go->write.get(), "x", 1), 1);
  char c;
  ASSERT_EQ(read(done->read.get(), &c, 1), 1);
  EXPECT_TRUE(dp::spank::port_binds(port)) << "free once the task dropped its copy";
  kill(task, SIGKILL);  // ours, by pid, not yet reaped
  waitpid(task, nullptr, 0);
}

// Tasks run task_init at once: rank 0 waits for a task that comes late to
// drop its copy before its program binds the port (rank 0's exec is played
// by closing its copy), and past the bound it goes on, saying so.
TEST(StepPortHold, RankZeroWaitsForTheOtherTasksCopiesToGo) {
  for (const int late_ms : {300, 2'000}) {
    int port = 0;
    dp::spank::StepPortHold hold;
    ASSERT_TRUE(hold.keep(held(port)).ok());
    auto bound = dp::make_pipe(O_CLOEXEC);
    ASSERT_TRUE(bound.ok());
    const pid_t late_task = fork();
    if (late_task == 0) {
      usleep(late_ms * 1000);
      hold.drop_task_copy();
      pause();
      _exit(0);
    }
    ASSERT_GT(late_task, 0);
    const pid_t rank0 = fork();
    if (rank0 == 0) {
      const auto start = Clock::now();
      const bool all_gone = hold.await_other_copies(1'000);
      const auto waited = Clock::now() - start;
      const int own = hold.fd(port);
      if (own >= 0) close(own);  // its exec
      const bool binds = dp::spank::port_binds(port);
      char line[64];
      const int n =
          snprintf(line, sizeof line, "%d %d %lld", all_gone ? 1 : 0, binds ? 1 : 0,
                   static_cast<long long>(
                       std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
      (void)!write(bound->write.get(), line, static_cast<size_t>(n));
      _exit(0);
    }
    ASSERT_GT(rank0, 0);
    hold.let_go_in_stepd();
    waitpid(rank0, nullptr, 0);
    // One write, done before its exit (the late task shares the pipe's write end).
    std::string said(64, '\0');
    const ssize_t n = read(bound->read.get(), said.data(), said.size());
    said.resize(n > 0 ? static_cast<size_t>(n) : 0);
    kill(late_task, SIGKILL);  // ours, by pid, not yet reaped
    waitpid(late_task, nullptr, 0);
    int all_gone = -1, binds = -1;
    long long waited_ms = -1;
    ASSERT_EQ(sscanf(said.c_str(), "%d %d %lld", &all_gone, &binds, &waited_ms), 3) << said;
    if (late_ms < 1'000) {
      EXPECT_EQ(all_gone, 1) << "a task " << late_ms << " ms late is waited for";
      EXPECT_EQ(binds, 1) << "rank 0's program binds the port once the copies are gone";
    } else {
      EXPECT_EQ(all_gone, 0) << "past the bound rank 0 goes on and says so";
      EXPECT_EQ(binds, 0) << "the late task still holds the port";
      EXPECT_GE(waited_ms, 1'000);
      EXPECT_LT(waited_ms, late_ms);
    }
  }
}

// Without a fence (a process that inherited no hold) there is nothing to wait for.
TEST(StepPortHold, NoHoldNoWait) {
  dp::spank::StepPortHold none;
  const auto start = Clock::now();
  EXPECT_TRUE(none.await_other_copies(5'000));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
}

// Rank 0's check: a hold taken over TIME_WAIT carries SO_REUSEADDR, so a
// program that sets it too can share the port; its listener fails the step,
// named by uid. An exclusive hold needs no look at the tables.
TEST(StepPortHold, RankZerosCheckNamesAListenerThatSharedTheHold) {
  int port = 0;
  UniqueFd exclusive = held_port(port);
  ASSERT_TRUE(exclusive);
  EXPECT_TRUE(dp::spank::check_step_port_before_exec(exclusive.get(), port).ok());
  exclusive.reset();
  UniqueFd shared_hold = reusing_socket(port, false);
  ASSERT_TRUE(shared_hold);
  EXPECT_TRUE(dp::spank::check_step_port_before_exec(shared_hold.get(), port).ok())
      << "nobody else listens yet";
  UniqueFd intruder = reusing_socket(port, true);
  ASSERT_TRUE(intruder) << "SO_REUSEADDR shares a port that is bound and not listening";
  auto r = dp::spank::check_step_port_before_exec(shared_hold.get(), port);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("held by uid " + std::to_string(getuid())), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("--dp-master-socket=pass"), std::string::npos);
  EXPECT_TRUE(dp::spank::check_step_port_before_exec(-1, port).ok()) << "no hold, nothing held";
}

// A port a server just used keeps its connections in TIME_WAIT, which only
// SO_REUSEADDR binds over; the hold then turns it off, so a binder that
// sets it too cannot share the port (on a kernel that checks each owner).
TEST(StepPortHold, AHoldOverTimeWaitStillKeepsOutReusingBinders) {
  int port = 0;
  UniqueFd server = held_port(port);
  server.reset();
  server = reusing_socket(port, true);
  ASSERT_TRUE(server);
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(client);
  UniqueFd accepted(accept(server.get(), nullptr, nullptr));
  accepted.reset();  // the server's side closes first: TIME_WAIT on `port`
  client.reset();
  server.reset();
  ASSERT_FALSE(reusing_socket(port, false, 0)) << "no TIME_WAIT to bind over";
  UniqueFd hold = dp::spank::hold_port(port);
  ASSERT_TRUE(hold) << "TIME_WAIT alone does not stop the hold";
  EXPECT_FALSE(reusing_socket(port, false)) << "a binder with SO_REUSEADDR shared the hold";
  EXPECT_FALSE(dp::spank::port_binds(port));
}

// Rank 0's program closes its store's connections first: their TIME_WAITs
// must not keep the next step of the port (a Slurm-reserved one comes round
// again soon) from holding it.
TEST(StepPortHold, APassedListenersConnectionsLeaveThePortToTheNextHold) {
  int port = 0;
  UniqueFd held = held_port(port);
  auto passed = dp::spank::master_listen_socket(held.get(), port);
  ASSERT_TRUE(passed.ok()) << passed.error().message;
  held.reset();
  UniqueFd client = connect_loopback(port);
  ASSERT_TRUE(client);
  UniqueFd accepted(accept(passed->get(), nullptr, nullptr));
  ASSERT_TRUE(accepted);
  accepted.reset();  // the program's side closes first: TIME_WAIT on `port`
  client.reset();
  passed->reset();
  ASSERT_FALSE(reusing_socket(port, false, 0)) << "no TIME_WAIT left";
  EXPECT_TRUE(dp::spank::hold_port(port)) << "the TIME_WAIT keeps the next step's hold out";
}

// As `uid` in a child: a socket on `port` (SO_REUSEPORT when asked, always
// SO_REUSEADDR, as servers bind) that listens; the child's exit status says
// whether it bound (0) or why not (errno).
int bind_as(uid_t uid, int port, bool reuseport) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(125);
    if (!bound_socket(port, {true, reuseport, true})) _exit(errno);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}

// --dp-master-socket=share: a hold shared with the job's user lets that
// user's server with SO_REUSEPORT (gRPC's) bind beside it, and keeps every
// other uid out, with SO_REUSEPORT or without; the job's user's server without
// it (PyTorch's TCPStore) is kept out too, as documented.
TEST(SharedHold, OnlyTheJobsUsersReuseportServerBindsBesideIt) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to play the job's user and a stranger";
  int port = 0;
  UniqueFd hold = held_port(port);
  ASSERT_TRUE(hold);
  ASSERT_TRUE(dp::spank::share_hold_with_user(hold.get(), 65534).ok());
  EXPECT_EQ(bind_as(65534, port, true), 0) << "the job's user's SO_REUSEPORT server";
  EXPECT_EQ(bind_as(65533, port, true), EADDRINUSE) << "a stranger with SO_REUSEPORT";
  EXPECT_EQ(bind_as(65533, port, false), EADDRINUSE) << "a stranger without";
  EXPECT_EQ(bind_as(65534, port, false), EADDRINUSE) << "the user's server without SO_REUSEPORT";
  EXPECT_EQ(bind_as(0, port, true), EADDRINUSE) << "root's own, as any other uid";
}

// The shared hold is bound and never listens: every connection to the port
// reaches the program's listener beside it, none is refused or lost.
TEST(SharedHold, TakesNoneOfTheListenersConnections) {
  int port = 0;
  UniqueFd hold = held_port(port);
  ASSERT_TRUE(hold);
  ASSERT_TRUE(dp::spank::share_hold_with_user(hold.get(), getuid()).ok());
  UniqueFd server = bound_socket(port, {false, true, true});
  ASSERT_TRUE(server) << "the program's SO_REUSEPORT server binds beside the hold";
  int accepted = 0;
  for (int i = 0; i < 1000; ++i) {
    UniqueFd client = connect_loopback(port);
    ASSERT_TRUE(client) << "connection " << i << " was refused";
    UniqueFd conn(accept(server.get(), nullptr, nullptr));
    if (conn) ++accepted;
  }
  EXPECT_EQ(accepted, 1000);
}

TEST(SocketTables, ATakenPortNamesItsListenersUidOrSaysWhyNot) {
  int port = 0;
  UniqueFd bound = held_port(port);
  EXPECT_NE(dp::spank::port_holder_text(port).find("does not listen"), std::string::npos)
      << dp::spank::port_holder_text(port);
  ASSERT_EQ(listen(bound.get(), 1), 0);
  EXPECT_EQ(dp::spank::port_holder_text(port), "held by uid " + std::to_string(getuid()));
}

// Root's end of the node agent: the agent is known by its pidfd alone.
dp::spank::NodeAgent child_agent(bool exits_on_eof) {
  auto in = dp::make_pipe(O_CLOEXEC);
  if (!in) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    in->write.reset();
    char c;
    if (exits_on_eof)
      while (read(in->read.get(), &c, 1) > 0) {
      }
    else pause();
    _exit(0);
  }
  dp::spank::NodeAgent a;
  a.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  a.control = std::move(in->write);
  return a;
}

pid_t pid_of(const dp::spank::NodeAgent& a) {
  std::ifstream in("/proc/self/fdinfo/" + std::to_string(a.pidfd.get()));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Pid:", 0) == 0) return std::stoi(line.substr(4));
  return -1;
}

TEST(StopAgent, AnAgentThatLeavesOnItsOwnIsReapedWithoutASignal) {
  auto a = child_agent(true);
  ASSERT_TRUE(a.running());
  const pid_t pid = pid_of(a);
  const auto t0 = Clock::now();
  dp::spank::stop_agent(a, 5'000);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2)) << "it left when its stdin closed";
  EXPECT_FALSE(a.running());
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1) << "reaped through its pidfd";
  EXPECT_EQ(errno, ECHILD);
}

TEST(StopAgent, AnAgentThatStaysIsKilledThroughItsPidfdAfterTheGrace) {
  auto a = child_agent(false);
  const pid_t pid = pid_of(a);
  const auto t0 = Clock::now();
  dp::spank::stop_agent(a, 100);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// The user stopped it (kill -STOP): continued, it reads to the end and leaves
// on its own, as the step's goodbye needs, instead of being killed.
TEST(StopAgent, AStoppedAgentIsContinuedToLeaveOnItsOwn) {
  auto a = child_agent(true);
  const pid_t pid = pid_of(a);
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WNOWAIT), 0);
  const auto t0 = Clock::now();
  dp::spank::stop_agent(a, 5'000);
  // Stopped, it would have sat out the whole grace and then been killed.
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2)) << "it left when its stdin closed";
  EXPECT_FALSE(a.running());
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1) << "reaped through its pidfd";
}

// slurmstepd reaped the agent first; its pid may belong to another process
// by now. Root's stop then signals and reaps nobody.
TEST(StopAgent, AnAgentSlurmstepdReapedLeavesEveryOtherProcessAlone) {
  auto a = child_agent(false);
  const pid_t pid = pid_of(a);
  kill(pid, SIGKILL);  // the test plays slurmstepd: its own child, not yet reaped
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  auto other = child_agent(false);
  const pid_t other_pid = pid_of(other);
  dp::spank::stop_agent(a, 0);
  EXPECT_EQ(waitpid(other_pid, nullptr, WNOHANG), 0) << "another child was reaped or killed";
  dp::spank::stop_agent(other, 0);
}

}  // namespace
