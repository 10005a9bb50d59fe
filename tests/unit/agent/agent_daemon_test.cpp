// The real dp-nodeagent between the real dp-rendezvousd and real clients:
// two agents (nodes) of two ranks each; multiplexing, barrier folding, get
// caching and the master-port exchange, seen in the daemon's own counters.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>

#include "daemon_process.hpp"
#include "launch_contract.hpp"
#include "loopback.hpp"
#include "rendezvous_client.hpp"

namespace dp::agent {
namespace {

using namespace std::chrono_literals;

// One dp-nodeagent with its two pipes, as slurmstepd starts it.
class AgentProcess {
 public:
  AgentProcess(uint16_t daemon_port, std::vector<int32_t> ranks, PortsRole master,
               StepPortsValue value = 0, bool store = false) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      execl(DP_NODEAGENT_PATH, DP_NODEAGENT_PATH, nullptr);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    control_ = in[1];
    AgentSettings s;
    s.addr = "127.0.0.1:" + std::to_string(daemon_port);
    s.secret = test::kSecret;
    s.host = "node" + std::to_string(ranks.front());
    s.world_size = 4;
    s.ranks = std::move(ranks);
    s.master = master;
    s.published = std::move(value);
    s.port_wait = 5s;
    s.serve_store = store;
    const std::string text = format_settings(s);
    EXPECT_EQ(write(control_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    std::string line;
    char c = 0;
    while (read(out[0], &c, 1) == 1 && c != '\n')
      line.push_back(c);  // the agent's deadline bounds it
    close(out[0]);
    answer_ = parse_answer(line);
  }
  ~AgentProcess() {
    if (control_ >= 0) {  // the step ends: the agent leaves
      const std::string end = std::string(kStepEndLine) + "\n";
      (void)!write(control_, end.data(), end.size());
      close(control_);
    }
    if (pid_ > 0 &&
        !test::poll_until([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, 5s)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  const Result<AgentAnswer>& answer() const { return answer_; }
  // slurmstepd killed: its end of the control pipe closes, no "step end" first.
  void lose_slurmstepd() {
    close(control_);
    control_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int control_ = -1;
  Result<AgentAnswer> answer_ = make_error(Errc::internal, "not started");
};

std::unique_ptr<RendezvousClient> rank_client(const test::DaemonProcess& d, const AgentAnswer& a,
                                              int rank) {
  ClientOptions o = d.client_options(rank, 4);
  o.agent_socket = a.socket;
  auto c = RendezvousClient::connect(o);
  EXPECT_TRUE(c) << c.error().message;
  return c ? std::move(*c) : nullptr;
}

// The daemon's requests less the agents' heartbeats: those follow the
// agents' clocks (one a second), not the test's calls.
uint64_t requests_but_heartbeats(const DaemonStats& s) {
  const std::string key = "\nheartbeats ";
  const auto at = s.text.find(key);
  EXPECT_NE(at, std::string::npos) << s.text;
  return s.requests - (at == std::string::npos ? 0 : std::stoull(s.text.substr(at + key.size())));
}

TEST(NodeAgent, TwoNodesOfTwoRanksTalkThroughOneConnectionEach) {
  test::DaemonProcess daemon(4);
  ASSERT_TRUE(daemon.ready());
  AgentProcess n0(daemon.port(), {0, 1}, PortsRole::publish, 29512);
  AgentProcess n1(daemon.port(), {2, 3}, PortsRole::fetch);
  ASSERT_TRUE(n0.answer()) << n0.answer().error().message;
  ASSERT_TRUE(n1.answer()) << n1.answer().error().message;
  EXPECT_EQ(n1.answer()->port, 29512);  // the master node's port reached the other node
  std::vector<std::unique_ptr<RendezvousClient>> ranks;
  for (int r = 0; r < 4; ++r)
    ranks.push_back(rank_client(daemon, r < 2 ? *n0.answer() : *n1.answer(), r));
  for (auto& c : ranks) ASSERT_TRUE(c);

  ASSERT_TRUE(ranks[0]->set_once("nccl/id", "the-id"));
  for (auto& c : ranks) EXPECT_EQ(c->get("nccl/id", 5s).value(), "the-id");
  // Each window between two stats calls: a round of gets of the write-once
  // key (every agent answers from its cache), a barrier (one arrival per node
  // upstream) and the stats request itself: three requests. A frame of the
  // agents' own may land in a window (seen once under ASan: two more); one
  // of three windows must hold exactly the three, which no uncached get allows.
  std::string windows;
  bool clean = false;
  for (int window = 0; window < 3 && !clean; ++window) {
    auto before = ranks[0]->stats();
    ASSERT_TRUE(before);
    EXPECT_EQ(before->connections, 2u);  // one per node, however many ranks
    for (auto& c : ranks) EXPECT_EQ(c->get("nccl/id", 5s).value(), "the-id");
    std::vector<std::thread> waiting;
    std::vector<Result<void>> done(4);
    const std::string name = "b" + std::to_string(window);
    for (int r = 0; r < 4; ++r)
      waiting.emplace_back([&, r] { done[r] = ranks[r]->barrier(name, 5s); });
    for (auto& t : waiting) t.join();
    for (auto& d : done) ASSERT_TRUE(d) << d.error().message;
    auto after = ranks[0]->stats();
    ASSERT_TRUE(after);
    const uint64_t seen = requests_but_heartbeats(*after) - requests_but_heartbeats(*before);
    clean = seen == 3;
    windows += "window " + std::to_string(window) + ": " + std::to_string(seen) +
               " requests; before:\n" + before->text + "after:\n" + after->text;
  }
  EXPECT_TRUE(clean) << windows;
  for (auto& c : ranks) EXPECT_TRUE(c->goodbye());
}

TEST(NodeAgent, ANodeRefusedAfterTheMasterNodesAbortStillGetsItsFailureTyped) {
  test::DaemonProcess daemon(4);
  ASSERT_TRUE(daemon.ready());
  AgentProcess n0(daemon.port(), {0, 1}, PortsRole::publish,
                  MasterFailure{"node0", "no free MASTER_PORT in 29400-29402"});
  ASSERT_TRUE(n0.answer()) << n0.answer().error().message;  // root knows its own cause
  ASSERT_TRUE(test::poll_until(
      [&] { return daemon.log().find("could not set up the step") != std::string::npos; }, 5s))
      << daemon.log();
  // The step is aborted: the daemon refuses this node's hello, with the cause typed.
  AgentProcess n1(daemon.port(), {2, 3}, PortsRole::fetch);
  ASSERT_TRUE(n1.answer()) << n1.answer().error().message;
  ASSERT_TRUE(n1.answer()->master_failure);
  EXPECT_EQ(n1.answer()->master_failure->node, "node0");
  EXPECT_EQ(n1.answer()->master_failure->reason, "no free MASTER_PORT in 29400-29402");
}

// A daemon of world 4 and the agents of its two nodes (no master port, no
// store), each answered: node0 ranks 0-1, node1 ranks 2-3.
class TwoNodeAgents : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon.ready());
    n0.emplace(daemon.port(), std::vector<int32_t>{0, 1}, PortsRole::none);
    n1.emplace(daemon.port(), std::vector<int32_t>{2, 3}, PortsRole::none);
    ASSERT_TRUE(n0->answer() && n1->answer());
  }
  test::DaemonProcess daemon{4};
  std::optional<AgentProcess> n0, n1;
};

TEST_F(TwoNodeAgents, ARankThatVanishesIsNamedToTheOtherNodeAtOnce) {
  // Rank 1 connects from its own process and exits without a goodbye.
  const AgentAnswer node0 = *n0->answer();
  const pid_t child = fork();
  if (child == 0) {
    ClientOptions o = daemon.client_options(1, 4);
    o.agent_socket = node0.socket;
    auto c = RendezvousClient::connect(o);
    _exit(c ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto lost_at = std::chrono::steady_clock::now();
  auto r2 = rank_client(daemon, *n1->answer(), 2);
  ASSERT_TRUE(r2);
  auto got = r2->barrier("never", 10s);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("rank 1"), std::string::npos) << got.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - lost_at, 2s);
}

// slurmstepd killed with its node closes the control pipe a moment before
// the kernel's death signal kills the agent: never a goodbye that would say
// the node's ranks finished; the daemon names the node lost.
TEST_F(TwoNodeAgents, AControlPipeClosedWithoutTheStepsEndIsALostNodeNotAGoodbye) {
  auto r2 = rank_client(daemon, *n1->answer(), 2);
  ASSERT_TRUE(r2);
  n0->lose_slurmstepd();
  auto got = r2->barrier("never", 10s);
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("node agent on host node0"), std::string::npos)
      << got.error().message;
  EXPECT_NE(got.error().message.find("had not said goodbye"), std::string::npos)
      << got.error().message;
}

// A PyTorch store client's bytes: VALIDATE, then `more`; the answer read
// within 5 s ("" when the agent closed without one).
// What `fd` sends until it closes, or `want` bytes came, within `limit`.
std::string read_for(int fd, size_t want, std::chrono::milliseconds limit) {
  std::string got;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (got.size() < want && std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

std::string store_exchange(int port, const std::string& more) {
  UniqueFd fd = test::connect_loopback(port);
  if (!fd) return "no connection";
  const std::string bytes = std::string("\x00\xce\xf7\x85\x3c", 5) + more;
  if (send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(bytes.size()))
    return "send failed";
  return read_for(fd.get(), 4, 5s);
}

// A PING (v2 opcode 13, uint32 nonce) answered with its nonce by the node's
// store, and only for the step's user: another user's client is closed unread.
TEST(NodeAgent, TheNodesPyTorchStoreAnswersOnlyTheStepsUser) {
  test::DaemonProcess daemon(4);  // the agents' world (AgentProcess): nodes {0,1} and {2,3}
  ASSERT_TRUE(daemon.ready());
  AgentProcess n0(daemon.port(), {0, 1}, PortsRole::none, 0, true);
  ASSERT_TRUE(n0.answer()) << n0.answer().error().message;
  const int port = n0.answer()->store_port;
  ASSERT_GT(port, 0);
  const std::string ping = std::string("\x0d\x2a\x00\x00\x00", 5);
  EXPECT_EQ(store_exchange(port, ping), std::string("\x2a\x00\x00\x00", 4));
  if (getuid() != 0) GTEST_SKIP() << "needs root to play another user";
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(p[0]);  // a child of the test before it execs nothing: its own copy
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    const std::string got = store_exchange(port, ping);
    (void)!write(p[1], got.data(), got.size());
    _exit(0);
  }
  close(p[1]);
  const std::string stranger = read_for(p[0], 64, 10s);
  close(p[0]);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(stranger, "");  // closed with no answer
}

}  // namespace
}  // namespace dp::agent
