// The node agent's abstract socket from another network namespace (a
// container with a network of its own): the client fails at once, naming the
// namespaces and the container options that cause it. Needs root (unshare).
#include "unix_connect.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "dp/unix_socket.hpp"
#include "rendezvous_client.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;

// An abstract socket that accepts nothing: connect() succeeds in its
// namespace, as with the agent's.
struct Listener {
  std::string name = "@dp-test-netns-" + std::to_string(getpid());
  int fd = -1;
  Listener() {
    auto addr = unix_address(name);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!addr || fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&addr->sa), addr->len) != 0 ||
        listen(fd, 8) != 0)
      ADD_FAILURE() << "cannot listen on " << name;
  }
  ~Listener() { ::close(fd); }
};

// Runs `f` in a child in a new network namespace; returns what it wrote.
template <class F>
std::string in_new_netns(F&& f) {
  int p[2];
  if (pipe(p) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(p[0]);
    const std::string out = unshare(CLONE_NEWNET) == 0 ? f() : "unshare failed";
    (void)!write(p[1], out.data(), out.size());
    _exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

TEST(UnixConnect, TheAgentsNamespaceReachesItsSocket) {
  Listener l;
  const std::string ns = rdv::network_namespace();
  ASSERT_EQ(ns.rfind("net:[", 0), 0u) << ns;
  auto fd = rdv::unix_connect_once(l.name, ns);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  ::close(*fd);
}

TEST(UnixConnect, AnotherNetworkNamespaceIsNamedWithTheContainerOptions) {
  if (geteuid() != 0) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs root";
  Listener l;
  const std::string agent_ns = rdv::network_namespace();
  const std::string out = in_new_netns([&] {
    ClientOptions o;
    o.agent_socket = l.name;
    o.agent_netns = agent_ns;
    o.secret = "00";
    o.rank = 0;
    o.world_size = 1;
    o.connect_timeout = milliseconds(20'000);
    const auto t0 = std::chrono::steady_clock::now();
    auto c = RendezvousClient::connect(o);
    const auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0);
    if (c) return std::string("connected");
    return std::string(errc_name(c.error().code)) + " after " + std::to_string(ms.count()) +
           " ms, in " + rdv::network_namespace() + ": " + c.error().message;
  });
  EXPECT_EQ(out.rfind("unavailable after ", 0), 0u) << out;
  // At once, not after the 20 s of retries a missing agent gets.
  EXPECT_LT(std::stoi(out.substr(std::string("unavailable after ").size())), 2000) << out;
  for (const char* part : {"network namespace", "--container-unshare=net", "enroot start --net",
                           "apptainer --net", l.name.c_str()})
    EXPECT_NE(out.find(part), std::string::npos) << part << " missing: " << out;
  EXPECT_NE(out.find("(" + agent_ns + ")"), std::string::npos) << out;
  EXPECT_EQ(out.find("in " + agent_ns + ":"), std::string::npos) << "the child stayed in " << out;
}

// Without DP_AGENT_NETNS (an older plugin) the failure stays a plain
// connection error, retried until the timeout.
TEST(UnixConnect, WithoutTheAgentsNamespaceItIsAConnectionError) {
  if (geteuid() != 0) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs root";
  Listener l;
  const std::string out = in_new_netns([&] {
    auto fd = rdv::unix_connect_once(l.name);
    return fd ? std::string("connected") : std::string(errc_name(fd.error().code));
  });
  EXPECT_EQ(out, "connection");
}

}  // namespace
}  // namespace dp::test
