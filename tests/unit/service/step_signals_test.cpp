#include "step_signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

// The node agent lives through what Slurm sends the step and learns which
// signals came, in order (a child process: the handlers are process-wide).
TEST(StepSignalPipe, RecordsTheStepsSignalsAndLivesThroughThem) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto pipe = dp::service::StepSignalPipe::install();
    if (!pipe) _exit(10);
    for (int s : {SIGUSR1, SIGUSR2, SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGRTMIN + 1, SIGPIPE})
      raise(s);
    const std::vector<int> want{SIGUSR1, SIGUSR2, SIGALRM, SIGTERM, SIGINT, SIGHUP, SIGRTMIN + 1};
    _exit(pipe->drain() == want && pipe->drain().empty() ? 0 : 11);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// dp-rendezvousd: every step signal but srun's SIGTERM is ignored.
TEST(StepSignals, TheDaemonIgnoresAllButItsStop) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dp::service::ignore_step_signals(SIGTERM);
    for (int s : {SIGUSR1, SIGUSR2, SIGINT, SIGHUP, SIGQUIT, SIGALRM, SIGXCPU, SIGRTMAX}) raise(s);
    raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

}  // namespace
