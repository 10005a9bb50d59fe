// Where a step's report socket lives: the user's own $XDG_RUNTIME_DIR first;
// the abstract socket found by its prefix; a socket served by another uid is
// never asked, and says whose it is.
#include "step_socket.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace dp::obs {
namespace {

// A listening abstract socket "@name" (the leading '@' becomes the NUL).
int listen_abstract(const std::string& name, int backlog = 4) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, name.data(), name.size());
  sa.sun_path[0] = '\0';
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, backlog) != 0)
    return -1;
  return fd;
}

TEST(StepSocket, TheUsersOwnRuntimeFolderComesFirst) {
  char t[] = "/tmp/dp-xdg-test-XXXXXX";
  ASSERT_NE(mkdtemp(t), nullptr);
  const char* old = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved = old ? old : "";
  setenv("XDG_RUNTIME_DIR", t, 1);
  auto d = user_dir(true);
  if (old) setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  else unsetenv("XDG_RUNTIME_DIR");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(*d, std::string(t) + "/slurm-dp");
  struct stat st {};
  ASSERT_EQ(stat(d->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::filesystem::remove_all(t);
}

TEST(StepSocket, TheAbstractSocketIsFoundByItsPrefix) {
  auto name = abstract_socket_name("424242", "3");
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(name->rfind("@slurm-dp-" + std::to_string(getuid()) + "/424242.3.", 0), 0u) << *name;
  const int fd = listen_abstract(*name);
  ASSERT_GE(fd, 0);
  const auto found = step_sockets("424242", "3");
  EXPECT_NE(std::find(found.begin(), found.end(), *name), found.end());
  EXPECT_EQ(running_steps("424242"), std::vector<std::string>{"3"});
  close(fd);
}

TEST(StepSocket, ASocketOfAnotherUserIsNeverAskedAndSaysWhose) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to serve a socket as another user";
  const std::string name = "@slurm-dp-" + std::to_string(getuid()) + "/424243.0.decoy";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    const int fd = listen_abstract(name);
    [[maybe_unused]] ssize_t n = write(ready[1], fd >= 0 ? "1" : "0", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, '1');
  auto st = query(name, std::chrono::milliseconds(1'000));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("uid 65534"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("not by a step daemon of yours"), std::string::npos);
}

// Fills a listener's backlog (it never accepts): a non-blocking connect
// finally answers EAGAIN. The connections are kept in held.
bool fill_backlog(const std::string& name, std::vector<int>& held) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, name.data(), name.size());
  sa.sun_path[0] = '\0';
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  for (int i = 0; i < 64; ++i) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    held.push_back(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) return errno == EAGAIN;
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StepSocket, AFullBacklogCostsTheDeadlineNotAHang) {
  const std::string name = "@slurm-dp-" + std::to_string(getuid()) + "/424244.0.full";
  const int fd = listen_abstract(name, 0);
  ASSERT_GE(fd, 0);
  std::vector<int> held;
  ASSERT_TRUE(fill_backlog(name, held));
  const auto t0 = std::chrono::steady_clock::now();
  auto st = query(name, std::chrono::milliseconds(300));
  const double took = seconds_since(t0);
  for (int h : held) close(h);
  close(fd);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::timeout) << st.error().message;
  EXPECT_NE(st.error().message.find("backlog full"), std::string::npos) << st.error().message;
  EXPECT_LT(took, 2.0) << "query overran its 300 ms deadline";
}

// Another user copies the step's prefix (anyone can read it) and listens with
// a full backlog: srun's end and dp-top never connect to it, so never wait on it.
TEST(StepSocket, AnotherUsersDecoyWithAFullBacklogIsNeverConnectedTo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to serve a socket as another user";
  const std::string prefix =
      "@slurm-dp-" + std::to_string(getuid()) + "/" + socket_name("424245", "0") + ".";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    const int fd = listen_abstract(prefix + "decoy", 0);
    std::vector<int> held;
    const bool full = fd >= 0 && fill_backlog(prefix + "decoy", held);
    [[maybe_unused]] ssize_t n = write(ready[1], full ? "1" : "0", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const auto listed = step_sockets("424245", "0");
  const auto steps = running_steps("424245");
  const auto t0 = std::chrono::steady_clock::now();
  auto st = query_step("424245", "0", std::chrono::milliseconds(5'000));
  const double took = seconds_since(t0);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  ASSERT_EQ(c, '1');
  EXPECT_TRUE(listed.empty()) << listed.front();
  EXPECT_TRUE(steps.empty());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::not_found) << st.error().message;
  EXPECT_LT(took, 1.0) << "query_step waited on another user's decoy";
}

// Another user fills the step's prefix with more decoys than a client looks
// at (64): they are left out before the count, so the owner's step is still
// found and listed, and no decoy is.
TEST(StepSocket, ManyDecoysOfAnotherUserNeverHideTheOwnersStep) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to serve a socket as another user";
  const std::string prefix = "@slurm-dp-" + std::to_string(getuid()) + "/424247.";
  constexpr int kDecoys = 500;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    const rlimit files{kDecoys + 64, kDecoys + 64};
    if (setrlimit(RLIMIT_NOFILE, &files) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    int made = 0;
    for (int i = 0; i < kDecoys; ++i)
      made += listen_abstract(prefix + std::to_string(i % 7) + ".decoy" + std::to_string(i)) >= 0;
    [[maybe_unused]] ssize_t n = write(ready[1], made == kDecoys ? "1" : "0", 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto name = abstract_socket_name("424247", "3");
  const int fd = name ? listen_abstract(*name) : -1;
  const auto listed = step_sockets("424247", "3");
  const auto steps = running_steps("424247");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  if (fd >= 0) close(fd);
  ASSERT_EQ(c, '1') << "the second user could not make its decoys";
  ASSERT_GE(fd, 0);
  EXPECT_EQ(listed, std::vector<std::string>{*name});
  EXPECT_EQ(steps, std::vector<std::string>{"3"});
}

}  // namespace
}  // namespace dp::obs
