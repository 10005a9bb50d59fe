// StacksReader against a real child process: the read happens on its own
// thread, the answer comes through the eventfd, and an ask that comes while
// a read runs gets the same answer under its own id.
#include "stacks_reader.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dp/proc_stat.hpp"

namespace dp::agent {
namespace {

class StacksReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pid_ = fork();
    if (pid_ == 0) {
      for (;;) pause();
    }
    ASSERT_GT(pid_, 0);
  }
  void TearDown() override {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  TaskStart task(int rank) { return TaskStart{rank, pid_, read_start_ticks(pid_).value_or(0)}; }
  std::vector<proto::StacksAnswer> wait_answers(StacksReader& r) {
    pollfd p{r.fd(), POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 10'000), 1);
    return r.take();
  }
  pid_t pid_ = 0;
};

TEST_F(StacksReaderTest, ARankIsReadOffTheCallersThread) {
  StacksReader reader;
  ASSERT_GE(reader.fd(), 0);
  reader.ask(7, {task(3)}, std::chrono::milliseconds(1500));
  const auto answers = wait_answers(reader);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].ask(), 7u);
  ASSERT_EQ(answers[0].ranks_size(), 1);
  const auto& rank = answers[0].ranks(0);
  EXPECT_EQ(rank.rank(), 3);
  EXPECT_EQ(rank.pid(), pid_);
  // The test binary is no Python: its kernel state, and why there are no frames.
  EXPECT_FALSE(rank.no_python().empty());
  ASSERT_GE(rank.threads_size(), 1);
  EXPECT_TRUE(rank.threads(0).has_kernel());
}

TEST_F(StacksReaderTest, ASecondAskJoinsTheReadInFlight) {
  StacksReader reader;
  reader.ask(1, {task(0)}, std::chrono::milliseconds(1500));
  reader.ask(2, {task(0)}, std::chrono::milliseconds(1500));
  const auto answers = wait_answers(reader);
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].ask(), 1u);
  EXPECT_EQ(answers[1].ask(), 2u);
  EXPECT_EQ(answers[0].ranks(0).pid(), answers[1].ranks(0).pid());
  // Then a new read for the next ask.
  reader.ask(3, {task(0)}, std::chrono::milliseconds(1500));
  const auto next = wait_answers(reader);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].ask(), 3u);
}

TEST_F(StacksReaderTest, AGonePidIsNamedNotRead) {
  StacksReader reader;
  TaskStart t = task(5);
  t.start_ticks += 1;  // another process than the one root reported
  reader.ask(9, {t}, std::chrono::milliseconds(1500));
  const auto answers = wait_answers(reader);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].ranks(0).no_python(), "gone");
}

}  // namespace
}  // namespace dp::agent
