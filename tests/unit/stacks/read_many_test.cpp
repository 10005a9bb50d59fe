// A node's processes read at once: one answer per target in order, whatever
// each one is (a native program, an ended pid, this test), the deadline kept
// when there is no time to read them, and a target whose read blocks never
// holds more than one thread, round after round.
#include "dp/stacks/read_many.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
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

// Polls `done` every millisecond for at most 5 s (readers end on their own).
template <class F>
bool soon(F done) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// A read that blocks where the kernel waits for a target's memory map lock
// (a dead file system under its mappings) cannot be interrupted. Its thread
// is left, but the target is not read again while it blocks: ten rounds
// later it still holds one thread, and the others are read every round.
TEST(ReadMany, ABlockedTargetStaysOneThreadAcrossTenRounds) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    std::atomic<int> reads{0};  // of the blocked target
  };
  auto gate = std::make_shared<Gate>();
  constexpr int kBlocked = 2'000'000'001;  // targets of this test alone (no real pid)
  ManyLimits limits;
  limits.deadline = 100ms;
  limits.threads = 4;
  limits.read = [gate](const Target& t, const ReadLimits&) {
    if (t.pid == kBlocked) {
      ++gate->reads;
      std::unique_lock lock(gate->mu);
      gate->cv.wait(lock, [&] { return gate->open; });
    }
    ProcessStacks p;
    p.pid = t.pid;
    p.no_python = NoStacks{NoPython::not_python, "read"};
    return p;
  };
  const std::vector<Target> targets{{kBlocked, 7, 0}, {kBlocked + 1, 7, 0}, {kBlocked + 2, 7, 0}};
  ASSERT_TRUE(soon([] { return live_readers() == 0; })) << "readers of earlier tests";
  for (int round = 0; round < 10; ++round) {
    const auto answers = read_processes(targets, limits);
    ASSERT_EQ(answers.size(), 3u);
    ASSERT_TRUE(answers[0].no_python);
    EXPECT_EQ(answers[0].no_python->why, NoPython::over_time) << round;
    for (size_t i = 1; i < 3; ++i) {
      ASSERT_TRUE(answers[i].no_python);
      EXPECT_EQ(answers[i].no_python->why, NoPython::not_python) << round;
    }
    EXPECT_TRUE(soon([] { return live_readers() == 1; }))
        << "round " << round << ": " << live_readers() << " reader threads alive";
  }
  EXPECT_EQ(gate->reads.load(), 1) << "the blocked target was read again";
  const auto later = read_processes(targets, limits);
  EXPECT_NE(later[0].no_python->detail.find("an earlier read of it still waits"), std::string::npos)
      << later[0].no_python->detail;
  {
    std::lock_guard lock(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  EXPECT_TRUE(soon([] { return live_readers() == 0; })) << live_readers();
  // Its read returned: it is read again.
  const auto again = read_processes(targets, limits);
  EXPECT_EQ(again[0].no_python->why, NoPython::not_python);
  EXPECT_EQ(gate->reads.load(), 2);
  EXPECT_TRUE(soon([] { return live_readers() == 0; }));
}

}  // namespace
}  // namespace dp::stacks
