// Who owns a TCP socket, from the kernel's socket table (dp/tcp_sockets.hpp).
// The owner of a local TCP connection's other end: this user, another user (a child that dropped to
// nobody), and a peer in another network namespace (no socket here to own it). Only the peer's own
// ESTABLISHED connection counts: a listener the kernel answers with instead
// (on the peer's port) and a TIME_WAIT socket (uid 0) are refused, both as
// the kernel answers and as pure decisions; a dual-stack client (PyTorch's)
// is its owner's, and its inode is its socket's. The table read bounded.
// Another user and another namespace need root.
#include "dp/tcp_sockets.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "dp/unique_fd.hpp"
#include "loopback.hpp"

namespace dp::test {
namespace {

struct LoopbackListener {
  sockaddr_in sa{};
  UniqueFd fd = listen_loopback(sa);
  LoopbackListener() {
    if (!fd) ADD_FAILURE() << "cannot listen on 127.0.0.1";
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

sockaddr_storage storage_of(const sockaddr_in& sa) {
  sockaddr_storage s{};
  std::memcpy(&s, &sa, sizeof sa);
  return s;
}

sockaddr_in local_end(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return sa;
}

// The peer's inode is the one its process's descriptor names
// (/proc/PID/fd: "socket:[inode]"): how the agent finds a store client's pid.
TEST(LocalTcpPeer, ThePeersInodeIsItsSockets) {
  LoopbackListener l;
  UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&l.sa), sizeof l.sa), 0);
  UniqueFd conn = l.accept_one();
  auto peer = local_tcp_peer(conn.get());
  ASSERT_TRUE(peer) << peer.error().message;
  struct stat st {};
  ASSERT_EQ(fstat(client.get(), &st), 0);
  EXPECT_EQ(peer->inode, st.st_ino);
  EXPECT_EQ(peer->port, ntohs(local_end(client.get()).sin_port));
}

// Any user can make the table long: the reader stops at its bound and says so.
TEST(TcpSockets, ReadsAtMostItsBoundAndSaysWhenPartial) {
  LoopbackListener a, b;
  auto all = tcp_sockets(1u << TCP_LISTEN, 1 << 16);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_FALSE(all->partial);
  int ours = 0;
  for (const TcpSocket& s : all->sockets)
    if (s.uid == getuid() && (s.port == ntohs(a.sa.sin_port) || s.port == ntohs(b.sa.sin_port)))
      ++ours;
  EXPECT_EQ(ours, 2) << "both listeners, with their owner";
  auto one = tcp_sockets(1u << TCP_LISTEN, 1);
  ASSERT_TRUE(one) << one.error().message;
  EXPECT_EQ(one->sockets.size(), 1u);
  EXPECT_TRUE(one->partial);
}

// A busy node's table is long with other ports' sockets (thousands of
// TIME_WAIT connections): the kernel leaves out what lies outside the asked
// ports, so those cut nothing of the span's own.
TEST(TcpSockets, TheKernelKeepsToTheAskedPorts) {
  LoopbackListener a, b;
  const int pa = ntohs(a.sa.sin_port), pb = ntohs(b.sa.sin_port);
  auto just_a = tcp_sockets(1u << TCP_LISTEN, 1, PortSpan{pa, pa});
  ASSERT_TRUE(just_a) << just_a.error().message;
  ASSERT_EQ(just_a->sockets.size(), 1u);
  EXPECT_EQ(just_a->sockets[0].port, pa);
  EXPECT_EQ(just_a->sockets[0].uid, getuid());
  EXPECT_FALSE(just_a->partial) << "b's listener lies outside the span";
  auto both = tcp_sockets(1u << TCP_LISTEN, 1, PortSpan{std::min(pa, pb), std::max(pa, pb)});
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->sockets.size(), 1u);
  EXPECT_TRUE(both->partial) << "two listeners in the span, a bound of one";
  auto listened = tcp_ports_listened_by(getuid(), {pb});
  ASSERT_TRUE(listened) << listened.error().message;
  EXPECT_EQ(*listened, std::set<int>{pb});
  auto empty = tcp_sockets(1u << TCP_LISTEN, 1, PortSpan{pa, pa - 1});
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->sockets.empty());
}

TEST(LocalTcpPeer, TheConnectingProcessesUid) {
  LoopbackListener l;
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&l.sa), sizeof l.sa), 0);
  UniqueFd own(client);
  UniqueFd conn = l.accept_one();
  auto uid = local_tcp_peer(conn.get());
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(uid->uid, getuid());
}

// PyTorch's TCPStore client connects from an AF_INET6 socket to an IPv4
// address (::ffff:127.0.0.1): the kernel reports its end as AF_INET6.
TEST(LocalTcpPeer, ADualStackClientIsItsOwners) {
  LoopbackListener l;
  UniqueFd client(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(client) << "no IPv6 sockets here";
  sockaddr_in6 mapped{};
  mapped.sin6_family = AF_INET6;
  mapped.sin6_port = l.sa.sin_port;
  ASSERT_EQ(inet_pton(AF_INET6, "::ffff:127.0.0.1", &mapped.sin6_addr), 1);
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&mapped), sizeof mapped), 0);
  UniqueFd conn = l.accept_one();
  auto uid = local_tcp_peer(conn.get());
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(uid->uid, getuid());
}

TEST(LocalTcpPeer, AnotherUsersConnectionIsTheirs) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to play another user";
  LoopbackListener l;
  auto hold = make_pipe(O_CLOEXEC);
  ASSERT_TRUE(hold);
  const pid_t pid = child_connects(l.sa, 65534, *hold);
  hold->read.reset();
  UniqueFd conn = l.accept_one();
  auto uid = local_tcp_peer(conn.get());
  hold->write.reset();
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(uid->uid, 65534u);
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
    auto uid = local_tcp_peer(conn.get());
    _exit(!uid && uid.error().code == Errc::not_found ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the peer was found, or unshare failed (2)";
}

// No connection has this pair, but a listener sits on the peer's side of it
// (as when a remote peer connects from a port a local user listens on): the
// kernel's exact lookup falls back to that listener, whose owner is no peer.
TEST(LocalTcpPeer, AListenerOnThePeersPortIsRefused) {
  LoopbackListener l;
  LoopbackListener unused;  // a port nobody connects from
  const sockaddr_in here = local_end(unused.fd.get());
  auto uid = tcp_peer(storage_of(here), storage_of(l.sa));
  ASSERT_FALSE(uid) << "the listener's owner (uid " << uid->uid << ") was taken for the peer's";
  EXPECT_EQ(uid.error().code, Errc::not_found);
  EXPECT_NE(uid.error().message.find("a listener"), std::string::npos) << uid.error().message;
}

// The peer closed first and its socket waits in TIME_WAIT: the kernel answers
// with it, and reports uid 0 for it. Nobody's connection, never root's.
TEST(LocalTcpPeer, ATimeWaitSocketIsRefused) {
  LoopbackListener l;
  UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr*>(&l.sa), sizeof l.sa), 0);
  UniqueFd conn = l.accept_one();
  const sockaddr_storage here = storage_of(local_end(conn.get()));
  const sockaddr_storage there = storage_of(local_end(client.get()));
  // The peer closes first (its FIN), we answer with ours; its EOF comes once
  // the kernel has put its end in TIME_WAIT (the same softirq pass).
  ASSERT_EQ(shutdown(client.get(), SHUT_WR), 0);
  char c;
  ASSERT_EQ(read(conn.get(), &c, 1), 0) << "the peer's FIN";
  conn.reset();
  ASSERT_EQ(read(client.get(), &c, 1), 0) << "our FIN at the peer";
  auto uid = tcp_peer(here, there);
  ASSERT_FALSE(uid) << "a TIME_WAIT socket's uid " << uid->uid << " was taken for the peer's";
  EXPECT_EQ(uid.error().code, Errc::not_found);
  EXPECT_NE(uid.error().message.find("TIME_WAIT"), std::string::npos) << uid.error().message;
}

// The decision itself, on answers the kernel could give.
struct Answers : ::testing::Test {
  inet_diag_req_v2 query{};
  inet_diag_msg answer{};
  void SetUp() override {
    query.sdiag_family = AF_INET;
    query.id.idiag_sport = htons(40000);
    query.id.idiag_dport = htons(29500);
    query.id.idiag_src[0] = htonl(0x0a000002);
    query.id.idiag_dst[0] = htonl(0x0a000001);
    answer.idiag_family = AF_INET;
    answer.idiag_state = TCP_ESTABLISHED;
    answer.id = query.id;
    answer.idiag_uid = 1001;
  }
};

TEST_F(Answers, TheMirroringConnectionIsThePeer) {
  auto uid = peer_from_answer(query, answer);
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(uid->uid, 1001u);
}

// PyTorch's client is a dual-stack socket: the kernel reports the same IPv4
// connection as AF_INET6 with ::ffff:a.b.c.d addresses.
TEST_F(Answers, ADualStackPeerIsThePeer) {
  answer.idiag_family = AF_INET6;
  for (auto* addr : {answer.id.idiag_src, answer.id.idiag_dst}) {
    const uint32_t v4 = addr[0];
    addr[0] = addr[1] = 0;
    addr[2] = htonl(0xffff);
    addr[3] = v4;
  }
  auto uid = peer_from_answer(query, answer);
  ASSERT_TRUE(uid) << uid.error().message;
  EXPECT_EQ(uid->uid, 1001u);
  answer.id.idiag_src[3] = htonl(0x0a000003);
  EXPECT_FALSE(peer_from_answer(query, answer)) << "another mapped address";
}

TEST_F(Answers, AListenerIsRefused) {
  answer.idiag_state = TCP_LISTEN;
  answer.id.idiag_dport = 0;
  answer.id.idiag_dst[0] = 0;
  auto uid = peer_from_answer(query, answer);
  ASSERT_FALSE(uid);
  EXPECT_NE(uid.error().message.find("a listener"), std::string::npos) << uid.error().message;
}

TEST_F(Answers, ATimeWaitSocketIsRefused) {
  answer.idiag_state = TCP_TIME_WAIT;
  answer.idiag_uid = 0;
  auto uid = peer_from_answer(query, answer);
  ASSERT_FALSE(uid);
  EXPECT_NE(uid.error().message.find("TIME_WAIT"), std::string::npos) << uid.error().message;
}

TEST_F(Answers, AnotherConnectionIsRefused) {
  for (auto change : {+[](inet_diag_msg& a) { a.id.idiag_sport = htons(40001); },
                      +[](inet_diag_msg& a) { a.id.idiag_dport = htons(29501); },
                      +[](inet_diag_msg& a) { a.id.idiag_src[0] = htonl(0x0a000003); },
                      +[](inet_diag_msg& a) { a.id.idiag_dst[0] = htonl(0x0a000003); },
                      +[](inet_diag_msg& a) { a.idiag_family = AF_INET6; }}) {
    inet_diag_msg other = answer;
    change(other);
    EXPECT_FALSE(peer_from_answer(query, other));
  }
}

}  // namespace
}  // namespace dp::test
