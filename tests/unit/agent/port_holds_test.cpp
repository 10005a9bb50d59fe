// The step's ports the agent holds past rank 0's exec (port_holds.hpp): taken
// from the descriptors root handed over, let go of once a listener of the
// agent's own uid is on the port, kept while only another uid's (or nobody's)
// listens. Real sockets and the kernel's table.
#include "port_holds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "dp/tcp_sockets.hpp"
#include "dp/unique_fd.hpp"
#include "loopback.hpp"

namespace dp::agent {
namespace {

// A socket on `port` (0: the OS's choice) with SO_REUSEPORT, listening or not.
UniqueFd reuseport_socket(int port, bool listening) {
  return test::bound_socket(port, {false, true, listening});
}

int port_of(int fd) {
  sockaddr_in6 a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin6_port);
}

TEST(PortHolds, AHoldGoesOnceTheUsersListenerIsOnItsPort) {
  UniqueFd hold = reuseport_socket(0, false);
  ASSERT_TRUE(hold);
  const int port = port_of(hold.get());
  std::vector<std::string> notes;
  // As root hands it over: at a descriptor the agent is told.
  const int at = fcntl(hold.get(), F_DUPFD, 200);
  ASSERT_GE(at, 200);
  hold.reset();
  PortHolds holds = PortHolds::adopt({port}, at, notes);
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(holds.ports(), std::vector<int>{port});
  EXPECT_NE(fcntl(at, F_GETFD) & FD_CLOEXEC, 0) << "the agent's own from now on";
  auto now = PortHolds::Clock::now();
  EXPECT_TRUE(holds.release_listened(now, getuid()).empty()) << "nobody listens yet";
  UniqueFd server = reuseport_socket(port, true);
  ASSERT_TRUE(server) << "the program's SO_REUSEPORT server binds beside the hold";
  now += PortHolds::kCheckEvery;
  EXPECT_TRUE(holds.release_listened(now, getuid() + 1).empty()) << "another uid's listener";
  now += PortHolds::kCheckEvery;
  EXPECT_EQ(holds.release_listened(now, getuid()), std::vector<int>{port});
  EXPECT_TRUE(holds.empty());
  EXPECT_EQ(fcntl(at, F_GETFD), -1) << "the hold's socket is closed";
  server.reset();
  EXPECT_TRUE(reuseport_socket(port, true)) << "nothing of the hold is left on the port";
}

TEST(PortHolds, ADescriptorThatIsNotTheHoldIsLeftAlone) {
  UniqueFd hold = reuseport_socket(0, false);
  ASSERT_TRUE(hold);
  std::vector<std::string> notes;
  PortHolds holds = PortHolds::adopt({port_of(hold.get()) + 1}, hold.get(), notes);
  EXPECT_TRUE(holds.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("not the hold of port"), std::string::npos) << notes[0];
  EXPECT_NE(fcntl(hold.get(), F_GETFD), -1) << "not closed";
}

TEST(TcpListeners, OnlyTheUidsListeningSocketsCount) {
  UniqueFd bound = reuseport_socket(0, false);
  UniqueFd listening = reuseport_socket(0, true);
  ASSERT_TRUE(bound && listening);
  const int b = port_of(bound.get()), l = port_of(listening.get());
  auto mine = dp::tcp_ports_listened_by(getuid(), {b, l});
  ASSERT_TRUE(mine) << mine.error().message;
  EXPECT_EQ(*mine, std::set<int>{l});
  auto theirs = dp::tcp_ports_listened_by(getuid() + 1, {b, l});
  ASSERT_TRUE(theirs);
  EXPECT_TRUE(theirs->empty());
}

}  // namespace
}  // namespace dp::agent
