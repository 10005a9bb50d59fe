// Random bytes: every byte asked for, or an error that names the cause; a
// source that keeps failing is never retried for ever.
#include "dp/random_bytes.hpp"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

namespace dp {
namespace {

int g_calls = 0;
int g_errno = 0;
int g_interrupts_left = 0;

ssize_t failing(void*, size_t, unsigned) {
  ++g_calls;
  errno = g_errno;
  return -1;
}

ssize_t one_byte_at_a_time(void* buf, size_t, unsigned) {
  ++g_calls;
  *static_cast<unsigned char*>(buf) = static_cast<unsigned char>(g_calls);
  return 1;
}

ssize_t interrupted_then_ok(void* buf, size_t len, unsigned) {
  ++g_calls;
  if (g_interrupts_left-- > 0) {
    errno = EINTR;
    return -1;
  }
  std::memset(buf, 7, len);
  return static_cast<ssize_t>(len);
}

ssize_t no_bytes(void*, size_t, unsigned) {
  ++g_calls;
  return 0;
}

void expect_fails_once(int e, const std::string& names) {
  g_calls = 0;
  g_errno = e;
  auto r = random_bytes(32, failing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(g_calls, 1) << "a failure other than EINTR is not retried";
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_NE(r.error().message.find("getrandom"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(names), std::string::npos) << r.error().message;
}

TEST(RandomBytes, ReadsEveryByteFromTheKernel) {
  auto a = random_bytes(32);
  auto b = random_bytes(32);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  auto big = random_bytes(1 << 20);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size(), size_t{1} << 20);
  auto none = random_bytes(0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(RandomBytes, ShortReadsAreCompleted) {
  g_calls = 0;
  auto r = random_bytes(5, one_byte_at_a_time);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, std::string("\1\2\3\4\5"));
  EXPECT_EQ(g_calls, 5);
}

TEST(RandomBytes, MissingOrForbiddenGetrandomIsNamed) {
  expect_fails_once(ENOSYS, "ENOSYS");
  expect_fails_once(EPERM, "seccomp");
  expect_fails_once(EFAULT, std::strerror(EFAULT));
}

TEST(RandomBytes, InterruptionsAreRetriedABoundedNumberOfTimes) {
  g_calls = 0;
  g_interrupts_left = 3;
  auto r = random_bytes(8, interrupted_then_ok);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, std::string(8, '\7'));
  EXPECT_EQ(g_calls, 4);

  g_calls = 0;
  g_errno = EINTR;
  auto forever = random_bytes(8, failing);
  ASSERT_FALSE(forever.ok());
  EXPECT_LE(g_calls, 20);
  EXPECT_NE(forever.error().message.find("interrupted"), std::string::npos);
}

TEST(RandomBytes, NoBytesIsAnErrorNotALoop) {
  g_calls = 0;
  auto r = random_bytes(8, no_bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(g_calls, 1);
}

// getrandom answers ENOSYS from here on, as under a container's seccomp
// profile that does not know it. Returns false where filters cannot be set.
bool hide_getrandom() {
#if defined(__x86_64__)
  constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

TEST(RandomBytes, UnderASeccompFilterTheRealCallFailsWithItsCause) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(p[0]);
    std::string line = "no filter";
    if (hide_getrandom()) {
      auto r = random_bytes(32);
      line = r.ok() ? "ok" : r.error().message;
    }
    [[maybe_unused]] ssize_t n = write(p[1], line.data(), line.size());
    _exit(0);
  }
  close(p[1]);
  pollfd fd{p[0], POLLIN, 0};
  const bool answered = poll(&fd, 1, 10'000) == 1;
  if (!answered) kill(pid, SIGKILL);
  char buf[512] = {};
  const ssize_t n = answered ? read(p[0], buf, sizeof buf - 1) : 0;
  close(p[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(answered) << "random_bytes did not return within 10 s under the filter";
  const std::string line(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (line == "no filter") GTEST_SKIP() << "seccomp filters cannot be set here";
  EXPECT_NE(line.find("ENOSYS"), std::string::npos) << line;
  EXPECT_NE(line.find("getrandom"), std::string::npos) << line;
}

}  // namespace
}  // namespace dp
