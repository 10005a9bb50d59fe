// A node's processes read at once: one answer per target in order, whatever
// each one is (a native program, an ended pid, this test), and the deadline
// kept when there is no time to read them.
#include "dp/stacks/read_many.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "process_group.hpp"

namespace dp::stacks {
namespace {

using namespace std::chrono_literals;

// `sleep 30` children, killed and reaped by pid at the end.
struct Sleepers {
  std::vector<test::Child> kids;
  explicit Sleepers(int n) {
    for (int i = 0; i < n; ++i) kids.push_back(test::spawn({"/bin/sleep", "30"}, {}, "/dev/null"));
  }
  ~Sleepers() {
    for (auto& k : kids) {
      ::kill(k.pid, SIGKILL);
      ::waitpid(k.pid, nullptr, 0);
    }
  }
};

TEST(ReadMany, EveryTargetAnsweredInOrder) {
  Sleepers sleepers(3);
  std::this_thread::sleep_for(100ms);  // each has exec'd sleep
  std::vector<Target> targets;
  for (const auto& k : sleepers.kids) {
    auto t = target_now(k.pid);
    ASSERT_TRUE(t) << k.pid;
    targets.push_back(*t);
  }
  Target ended = targets[0];
  ended.start_ticks += 1;  // its pid names another process now
  targets.push_back(ended);
  targets.push_back(*target_now(::getpid()));
  ManyLimits limits;
  limits.threads = 2;
  const auto start = std::chrono::steady_clock::now();
  const auto answers = read_processes(targets, limits);
  EXPECT_LT(std::chrono::steady_clock::now() - start, limits.deadline);
  ASSERT_EQ(answers.size(), targets.size());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(answers[i].pid, targets[i].pid);
    ASSERT_TRUE(answers[i].no_python);
    EXPECT_EQ(answers[i].no_python->why, NoPython::not_python) << answers[i].no_python->detail;
    ASSERT_EQ(answers[i].threads.size(), 1u);
    EXPECT_EQ(answers[i].threads[0].tid, targets[i].pid);
  }
  EXPECT_EQ(answers[3].no_python->why, NoPython::gone);
  EXPECT_EQ(answers[4].pid, ::getpid());
  EXPECT_FALSE(answers[4].threads.empty());
}

TEST(ReadMany, NoTimeLeftIsOverTimeForEach) {
  Sleepers sleepers(2);
  std::vector<Target> targets;
  for (const auto& k : sleepers.kids) targets.push_back(*target_now(k.pid));
  ManyLimits limits;
  limits.deadline = 0ms;
  const auto answers = read_processes(targets, limits);
  ASSERT_EQ(answers.size(), 2u);
  for (const auto& a : answers) {
    ASSERT_TRUE(a.no_python);
    EXPECT_EQ(a.no_python->why, NoPython::over_time) << a.no_python->detail;
  }
}

TEST(ReadMany, NoTargetsNoAnswers) { EXPECT_TRUE(read_processes({}, {}).empty()); }

}  // namespace
}  // namespace dp::stacks
