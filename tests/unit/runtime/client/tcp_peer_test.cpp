// The owner of a local TCP connection's other end, from the kernel's socket
// table: this user, another user (a child that dropped to nobody), and a peer
// in another network namespace (no socket here to own it). Needs root.
#include "tcp_peer.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dp/unique_fd.hpp"

namespace dp::test {
namespace {

struct LoopbackListener {
  UniqueFd fd{socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  sockaddr_in sa{};
  LoopbackListener() {
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        listen(fd.get(), 8) != 0 ||
        getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
  }
  UniqueFd accept_one() { return UniqueFd(accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC)); }
};

bool connect_to(const sockaddr_in& sa) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  return fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0;
}

// A child as `uid` connects and waits until the parent has asked (its exit
// would remove its socket): it reads its stdin pipe to EOF.
pid_t child_connects(const sockaddr_in& sa, uid_t uid, PipeEnds& hold) {
  const pid_t pid = fork();
  if (pid == 0) {
    // The parent's end, or the child would never read EOF (no exec closes it).
    ::close(hold.write.release());
    const int hold_fd = hold.read.get();
    if (setgid(uid) != 0 || setuid(uid) != 0 || !connect_to(sa)) _exit(1);
    char c;
    while (read(hold_fd, &c, 1) > 0) {
    }
    _exit(0);
  }
  return pid;
}

TEST(LocalTcpPeer, TheConnectingProcessesUid) {
  LoopbackListener l;
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&l.sa), sizeof l.sa), 0);
  UniqueFd own(client);
  UniqueFd conn = l.accept_one();
  auto uid = rdv::local_tcp_peer_uid(conn.get());
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(*uid, getuid());
}

TEST(LocalTcpPeer, AnotherUsersConnectionIsTheirs) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to play another user";
  LoopbackListener l;
  auto hold = make_pipe(O_CLOEXEC);
  ASSERT_TRUE(hold);
  const pid_t pid = child_connects(l.sa, 65534, *hold);
  hold->read.reset();
  UniqueFd conn = l.accept_one();
  auto uid = rdv::local_tcp_peer_uid(conn.get());
  hold->write.reset();
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(*uid, 65534u);
}

TEST(LocalTcpPeer, APeerOfAnotherNetworkNamespaceHasNoOwnerHere) {
  if (getuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  // A connection made here, asked about from a namespace of its own: the
  // kernel's table there has no socket at the other end, as for a peer that
  // reached a node's address from another host or a container's network.
  LoopbackListener l;
  UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&l.sa), sizeof l.sa), 0);
  UniqueFd conn = l.accept_one();
  const pid_t pid = fork();
  if (pid == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(2);
    auto uid = rdv::local_tcp_peer_uid(conn.get());
    _exit(!uid && uid.error().code == Errc::not_found ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the peer was found, or unshare failed (2)";
}

}  // namespace
}  // namespace dp::test
