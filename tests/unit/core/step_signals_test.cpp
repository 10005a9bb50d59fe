#include "dp/step_signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>

namespace {

using std::chrono::milliseconds;

TEST(StepSignals, SlurmsSignalsAreTheTasksButFaultsStillEndAProcess) {
  for (int s : {SIGHUP,   SIGINT,  SIGQUIT, SIGUSR1,  SIGUSR2,      SIGPIPE, SIGALRM,   SIGTERM,
                SIGTSTP,  SIGTTIN, SIGTTOU, SIGURG,   SIGXCPU,      SIGXFSZ, SIGVTALRM, SIGPROF,
                SIGWINCH, SIGIO,   SIGPWR,  SIGRTMIN, SIGRTMIN + 3, SIGRTMAX})
    EXPECT_TRUE(dp::is_step_signal(s)) << dp::signal_name(s);
  for (int s : {SIGKILL, SIGSTOP, SIGCONT, SIGCHLD, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
                SIGSYS, SIGABRT, 0, -1, NSIG + 5})
    EXPECT_FALSE(dp::is_step_signal(s)) << dp::signal_name(s);
}

TEST(StepSignals, NamesAsScancelTakesThem) {
  EXPECT_EQ(dp::signal_name(SIGUSR1), "USR1");
  EXPECT_EQ(dp::signal_name(SIGTERM), "TERM");
  EXPECT_EQ(dp::signal_name(SIGRTMIN), "RTMIN");
  EXPECT_EQ(dp::signal_name(SIGRTMIN + 2), "RTMIN+2");
  EXPECT_EQ(dp::signal_name(200), "200");
}

TEST(StepSignals, ATaskDyingOfTheNoticeItGotIsTheUsers) {
  const dp::ReceivedSignal usr1{SIGUSR1, milliseconds(900'000)};
  EXPECT_EQ(dp::user_signal_cause(usr1, SIGUSR1), SIGUSR1);
  // A notice the task handled: its later crash is its own failure.
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGUSR1, milliseconds(10)}, SIGSEGV),
            std::nullopt);
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGUSR1, milliseconds(10)}, std::nullopt),
            std::nullopt);
  EXPECT_EQ(dp::user_signal_cause(std::nullopt, SIGUSR1), std::nullopt);
}

TEST(StepSignals, EveryEndSoonAfterACancelIsTheCancels) {
  // A task that handles SIGTERM, checkpoints and exits 1, or one Slurm kills after KillWait.
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGTERM, milliseconds(30'000)}, std::nullopt),
            SIGTERM);
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGINT, milliseconds(5)}, SIGKILL), SIGINT);
  // Long after: a failure of its own.
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGTERM, dp::kUserEndWindow + milliseconds(1)},
                                  std::nullopt),
            std::nullopt);
  EXPECT_EQ(dp::user_signal_cause(dp::ReceivedSignal{SIGTERM, milliseconds(-1)}, std::nullopt),
            std::nullopt);
}

TEST(StepSignals, TheVerdictSaysTheUserEndedTheStep) {
  EXPECT_STREQ(dp::user_signal_verdict(SIGTERM), "cancelled");
  EXPECT_STREQ(dp::user_signal_verdict(SIGINT), "interrupted");
  EXPECT_STREQ(dp::user_signal_verdict(SIGUSR2), "signalled");
  EXPECT_EQ(dp::user_signal_headline(SIGTERM).rfind("cancelled by the user (SIGTERM", 0), 0u);
  EXPECT_EQ(dp::user_signal_headline(SIGINT).rfind("ended by the user (SIGINT: Ctrl-C", 0), 0u);
  EXPECT_EQ(dp::user_signal_headline(SIGUSR1).rfind("signalled (USR1) by the user", 0), 0u);
  EXPECT_EQ(dp::user_signal_headline(SIGHUP).rfind("cancelled by the user (SIGHUP", 0), 0u);
}

}  // namespace
