// dp-top reads its JOBID[.STEP] with the one strict integer parser: a value
// Slurm cannot have given is a usage error naming it, before any look-up
// (strtoul once turned 4294967296 into job 0 and 99999999999999999999 into
// the largest job id).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

namespace {

// Exit status and output (stdout and stderr) of `dp-top --once ARG`.
std::pair<int, std::string> dp_top(const std::string& arg) {
  const std::string cmd = std::string(DP_TOP) + " --once '" + arg + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
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

}  // namespace
