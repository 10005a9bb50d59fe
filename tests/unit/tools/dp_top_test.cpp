// dp-top reads its JOBID[.STEP] with the one strict integer parser: a value
// Slurm cannot have given is a usage error naming it, before any look-up
// (strtoul once turned 4294967296 into job 0 and 99999999999999999999 into
// the largest job id). What a step's daemon answers is its owner's word:
// root's dp-top shows it escaped and refuses a report nested past its bound.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "dp/proto/rendezvous.pb.h"
#include "frame_codec.hpp"
#include "step_socket.hpp"

namespace {

// Exit status and output (stdout and stderr) of `dp-top ARGS`.
std::pair<int, std::string> dp_top_args(const std::string& args) {
  const std::string cmd = std::string(DP_TOP) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::pair<int, std::string> dp_top(const std::string& arg) {
  return dp_top_args("--once '" + arg + "'");
}

TEST(DpTop, AJobOrStepSlurmCannotHaveGivenIsAUsageErrorNamingIt) {
  for (const auto& [arg, why] : {std::pair{"4294967296", "out of range"},
                                 {"99999999999999999999", "too large"},
                                 {"0", "zero"},
                                 {"12x", "unexpected 'x'"},
                                 {"5.-1", "negative"},
                                 {"12.x", "not a whole number"},
                                 {"12.4294967296", "out of range"},
                                 {"12.", "empty value"}}) {
    auto [status, out] = dp_top(arg);
    EXPECT_EQ(status, 2) << arg << ": " << out;
    EXPECT_NE(out.find("'" + std::string(arg) + "' is not JOBID or JOBID.STEP"), std::string::npos)
        << out;
    EXPECT_NE(out.find(why), std::string::npos) << arg << ": " << out;
  }
}

TEST(DpTop, AValidJobIsLookedUpAsSlurmWritesIt) {
  // Leading zeros are the same job: the step socket it looks for is 7.1's.
  // (The user's socket folder, as the first srun of a step creates it.)
  mkdir(("/tmp/slurm-dp-" + std::to_string(getuid())).c_str(), 0700);
  auto [status, out] = dp_top("007.01");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("step 7.1:"), std::string::npos) << out;
}

// A step "daemon" its owner wrote: listens where dp-top looks for job.0 and
// answers every question with `answer`, in a child process.
class OwnersDaemon {
 public:
  OwnersDaemon(const std::string& job, const dp::proto::Response& answer) {
    std::string frame;
    dp::rdv::append_frame(answer, frame);
    const auto name = dp::obs::abstract_socket_name(job, "0");
    int ready[2];
    if (!name || pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) serve(*name, frame, ready[1]);
    char c = 0;
    ok_ = read(ready[0], &c, 1) == 1 && c == '1';
    close(ready[0]);
    close(ready[1]);
  }
  ~OwnersDaemon() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  bool ok() const { return ok_; }

 private:
  [[noreturn]] static void serve(const std::string& name, const std::string& frame, int ready) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, name.data(), name.size());
    sa.sun_path[0] = '\0';
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool up =
        fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&sa), len) == 0 && listen(fd, 8) == 0;
    [[maybe_unused]] ssize_t n = write(ready, up ? "1" : "0", 1);
    while (up) {
      const int c = accept(fd, nullptr, nullptr);
      if (c < 0) continue;
      char request[4096];
      [[maybe_unused]] ssize_t got = read(c, request, sizeof request);
      for (size_t at = 0; at < frame.size();) {
        const ssize_t w = write(c, frame.data() + at, frame.size() - at);
        if (w <= 0) break;
        at += static_cast<size_t>(w);
      }
      close(c);
    }
    _exit(1);
  }
  pid_t pid_ = -1;
  bool ok_ = false;
};

bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c >= 0x7f) return true;
  return false;
}

TEST(DpTop, ADaemonsErrorTextIsShownEscapedNeverAsTerminalControl) {
  if (access("/etc/slurm/slurm.conf", R_OK) == 0 && geteuid() == 0)
    GTEST_SKIP() << "root's dp-top asks slurmctld for the job's user here";
  dp::proto::Response r;
  r.set_code(dp::proto::INTERNAL);
  r.set_message("\x1b]0;owned\x07\x1b[2J\nslurm-dp: step 1.0 completed");
  OwnersDaemon daemon("424260", r);
  ASSERT_TRUE(daemon.ok());
  auto [status, out] = dp_top_args("--once 424260.0");
  EXPECT_EQ(status, 1) << out;
  EXPECT_FALSE(has_control(out)) << out;
  EXPECT_NE(out.find("\\x1b]0;owned\\x07"), std::string::npos) << out;
  EXPECT_EQ(out.find("\nslurm-dp: step 1.0 completed"), std::string::npos) << out;
}

TEST(DpTop, AReportNestedPastTheBoundIsRefusedNotACrash) {
  if (access("/etc/slurm/slurm.conf", R_OK) == 0 && geteuid() == 0)
    GTEST_SKIP() << "root's dp-top asks slurmctld for the job's user here";
  dp::proto::Response r;
  r.mutable_stats()->set_report_json(std::string(1'000'000, '[') + std::string(1'000'000, ']'));
  OwnersDaemon daemon("424261", r);
  ASSERT_TRUE(daemon.ok());
  auto [status, out] = dp_top_args("--json 424261.0");
  EXPECT_EQ(status, 0) << out.substr(0, 200);
  EXPECT_EQ(out, "{\"error\": \"the daemon's report nests deeper than 32 levels\"}\n");
}

}  // namespace
