// Naming a PyTorch store client by its process (store_client.hpp): the
// environment's parser on recorded text, and the lookup on a real connection
// whose other end a child process with RANK in its environment holds.
#include "store_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "loopback.hpp"

namespace dp::agent {
namespace {

TEST(StoreClient, RankIsReadFromTheEnvironment) {
  using namespace std::string_literals;
  EXPECT_EQ(environ_rank("PATH=/bin\0LOCAL_RANK=1\0RANK=12\0"s), 12);
  EXPECT_EQ(environ_rank("LOCAL_RANK=1\0GROUP_RANK=0\0"s), std::nullopt);
  EXPECT_EQ(environ_rank("RANK=x1\0"s), std::nullopt);
  EXPECT_EQ(client_name(812, 3), "rank 3 (pid 812)");
  EXPECT_EQ(client_name(812, std::nullopt), "pid 812 (no RANK)");
  EXPECT_EQ(client_name(std::nullopt, std::nullopt), "a client not found in /proc");
}

// The listener is IPv4 (127.0.0.1, as the agent's); the client's socket is
// IPv4 or, as PyTorch 1.13's is, IPv6 with the IPv4-mapped address.
std::string name_of_child_client(bool v6_client, pid_t& child) {
  sockaddr_in a{};
  const UniqueFd listener = test::listen_loopback(a);
  EXPECT_TRUE(listener) << "cannot listen on 127.0.0.1";
  // Not close-on-exec: the child holds it.
  const int client = socket(v6_client ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  sockaddr_in6 a6{};
  a6.sin6_family = AF_INET6;
  a6.sin6_port = a.sin_port;
  inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr);
  const int rc = v6_client ? connect(client, reinterpret_cast<sockaddr*>(&a6), sizeof a6)
                           : connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a);
  EXPECT_EQ(rc, 0);
  int exec_done[2];  // close-on-exec: EOF once the child runs with its own environment
  EXPECT_EQ(pipe2(exec_done, O_CLOEXEC), 0);
  child = fork();
  if (child == 0) {
    char* argv[] = {const_cast<char*>("sleep"), const_cast<char*>("30"), nullptr};
    char* envp[] = {const_cast<char*>("RANK=5"), nullptr};
    execve("/bin/sleep", argv, envp);
    _exit(127);
  }
  close(client);
  close(exec_done[1]);
  char byte;
  EXPECT_EQ(read(exec_done[0], &byte, 1), 0);
  close(exec_done[0]);
  const int accepted = accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
  const std::string name = store_client_name(accepted);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(accepted);
  return name;
}

TEST(StoreClient, TheProcessAtTheOtherEndIsNamedByItsRank) {
  for (bool v6 : {false, true}) {
    pid_t child = -1;
    const std::string name = name_of_child_client(v6, child);
    EXPECT_EQ(name, "rank 5 (pid " + std::to_string(child) + ")") << (v6 ? "IPv6" : "IPv4");
  }
}

}  // namespace
}  // namespace dp::agent
