// Where a step's report socket lives: the user's own $XDG_RUNTIME_DIR first;
// the abstract socket found by its prefix; a socket served by another uid is
// never asked, and says whose it is.
#include "step_socket.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace dp::obs {
namespace {

// A listening abstract socket "@name" (the leading '@' becomes the NUL).
int listen_abstract(const std::string& name) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, name.data(), name.size());
  sa.sun_path[0] = '\0';
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || listen(fd, 4) != 0)
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

}  // namespace
}  // namespace dp::obs
