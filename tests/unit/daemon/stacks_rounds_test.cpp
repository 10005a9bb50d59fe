// The stacks rounds alone, from plain answers: one round in flight, each
// node's answer once, the round ending with the last answer or at its
// deadline naming who never answered, and the survivors at a failure merged
// once per node. The broker's side (whom it asks, the watch) is
// broker_stacks_test.cpp.
#include "stacks_rounds.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "stacks_answer.hpp"

namespace dp::daemon {
namespace {

using std::chrono::milliseconds;

const Clock::time_point kRound0 = Clock::time_point{} + std::chrono::hours(1);

// A node's ranks, each asleep without Python frames; `unread`: one NCCL-less
// flight recorder reason per rank ("no pipe..." is no NCCL program).
proto::StacksAnswer node_answer(uint64_t ask, std::vector<int> ranks,
                                const std::string& unread = {}) {
  proto::StacksAnswer a;
  a.set_ask(ask);
  for (int rank : ranks) {
    test::add_rank_thread(a, rank)->set_no_python("debug_build");
    if (!unread.empty()) {
      auto* f = a.add_flights();
      f->set_rank(rank);
      f->set_pid(100 + rank);
      f->set_unread(unread);
    }
  }
  return a;
}

std::string round_text(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST(StacksRounds, OneRoundAtATimeEndsWithItsLastAnswer) {
  StacksRounds rounds;
  auto push = rounds.start(kRound0, true, {{1, "ranks 0-1 (na)"}, {2, "ranks 2-3 (nb)"}});
  ASSERT_TRUE(push);
  EXPECT_TRUE(push->stacks_ask().flight());
  EXPECT_EQ(push->stacks_ask().deadline_ms(), 1500u);  // room for the answer to travel
  const uint64_t ask = push->stacks_ask().ask();
  EXPECT_FALSE(rounds.start(kRound0, false, {{1, "x"}}));  // one runs: joined, not restarted
  EXPECT_EQ(rounds.deadline(), kRound0 + StacksRounds::kWait);
  std::vector<std::string> got;
  rounds.add_caller([&](std::vector<std::string> l) { got = std::move(l); });
  EXPECT_FALSE(rounds.answer(2, "nb", node_answer(ask, {2, 3}, "no pipe: not an NCCL program")));
  EXPECT_FALSE(rounds.answer(2, "nb", node_answer(ask, {2, 3})));      // once per node
  EXPECT_FALSE(rounds.answer(3, "nc", node_answer(ask, {4})));         // not asked
  EXPECT_FALSE(rounds.answer(1, "na", node_answer(ask + 1, {0, 1})));  // another round's
  EXPECT_TRUE(rounds.answer(1, "na", node_answer(ask, {0, 1}, "dump unreadable")));
  auto f = rounds.finish();
  EXPECT_FALSE(rounds.running());
  EXPECT_TRUE(f.complete);
  EXPECT_EQ(f.got.size(), 4u);
  EXPECT_EQ(f.flights.size(), 4u);  // the watch judges every node's
  ASSERT_EQ(f.callers.size(), 1u);
  f.callers[0](f.lines);
  const std::string text = round_text(got);
  EXPECT_NE(text.find("ranks 0-3: main thread sleeping"), std::string::npos) << text;
  EXPECT_NE(text.find("flight recorder not read: ranks 0-1 (dump unreadable)"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("no pipe"), std::string::npos) << text;  // no NCCL program there
  EXPECT_NE(text.find("read on na (ranks 0-1), nb (ranks 2-3)\n"), std::string::npos) << text;
  auto next = rounds.start(kRound0 + milliseconds(10), false, {{1, "ranks 0-1 (na)"}});
  ASSERT_TRUE(next);
  EXPECT_NE(next->stacks_ask().ask(), ask);
}

TEST(StacksRounds, ANodeThatNeverAnswersIsNamedAtTheDeadline) {
  StacksRounds rounds;
  const uint64_t ask = rounds.start(kRound0, false, {{1, "ranks 0-1 (na)"}, {2, "ranks 2-3 (nb)"}})
                           ->stacks_ask()
                           .ask();
  rounds.add_caller([](std::vector<std::string>) {});
  rounds.for_watch();
  EXPECT_FALSE(rounds.answer(1, "na", node_answer(ask, {0, 1})));
  EXPECT_FALSE(rounds.expired(kRound0 + StacksRounds::kWait - milliseconds(1)));
  EXPECT_TRUE(rounds.expired(kRound0 + StacksRounds::kWait));
  auto f = rounds.finish();
  EXPECT_FALSE(f.complete);
  EXPECT_TRUE(f.for_watch);
  const std::string text = round_text(f.lines);
  EXPECT_NE(text.find("ranks 0-1: main thread sleeping"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks 2-3 (nb): no answer within 2 s"), std::string::npos) << text;
}

TEST(StacksRounds, ARoundWithNobodyToAskSaysSoAndOneWithoutCallersHasNoLines) {
  StacksRounds rounds;
  ASSERT_TRUE(rounds.start(kRound0, true, {}));
  rounds.add_caller([](std::vector<std::string>) {});
  EXPECT_EQ(round_text(rounds.finish().lines), "no node agent is connected: no rank to read\n");
  const uint64_t ask = rounds.start(kRound0, false, {{1, "ranks 0 (na)"}})->stacks_ask().ask();
  ASSERT_TRUE(rounds.answer(1, "na", node_answer(ask, {0})));
  auto f = rounds.finish();
  EXPECT_TRUE(f.lines.empty());
  EXPECT_EQ(f.got.size(), 1u);
}

TEST(StacksRounds, TheSurvivorsAtAFailureAreMergedOncePerNode) {
  StacksRounds rounds;
  auto a = rounds.at_failure(1, "na", node_answer(0, {0, 1}));
  ASSERT_TRUE(a);
  EXPECT_NE(round_text(*a).find("ranks 0-1: main thread sleeping"), std::string::npos)
      << round_text(*a);
  EXPECT_FALSE(rounds.at_failure(1, "na", node_answer(0, {0, 1, 2})));
  auto b = rounds.at_failure(2, "nb", node_answer(0, {2, 3}));
  ASSERT_TRUE(b);
  EXPECT_NE(round_text(*b).find("ranks 0-3: main thread sleeping"), std::string::npos)
      << round_text(*b);
}

}  // namespace
}  // namespace dp::daemon
