// The watches alone (step_watches.hpp): dp-top --stacks asks every node
// agent and finishes with their answers, or at once with none; the
// straggler watch's ask goes only where it is on; a hang from libdp's
// counters is named, and ends the step only with --dp-on-hang=end. A
// StepState and a recording StepEffects; no broker.
#include "step_watches.hpp"

#include "stacks_answer.hpp"
#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

using std::chrono::milliseconds;

class StepWatchesTest : public StepTest {
 protected:
  StepWatches watches_{step_, effects_, t0_};
};

TEST_F(StepWatchesTest, StacksWithoutANodeAgentFinishAtOnce) {
  int calls = 0;
  watches_.ask([&](const std::vector<std::string>&) { ++calls; }, t0_);
  EXPECT_EQ(calls, 1);
}

TEST_F(StepWatchesTest, StacksFinishOnceEveryNodeAgentAnswered) {
  node(1, 0, "na", {0, 1});
  node(2, 1, "nb", {2, 3});
  std::vector<std::string> got;
  int calls = 0;
  watches_.ask(
      [&](const std::vector<std::string>& lines) {
        ++calls;
        got = lines;
      },
      t0_);
  ASSERT_TRUE(out_.last(1).has_stacks_ask());
  ASSERT_TRUE(out_.last(2).has_stacks_ask());
  const uint64_t ask = out_.last(1).stacks_ask().ask();
  proto::StacksAnswer a;
  a.set_ask(ask);
  add_rank_thread(a, 0);
  watches_.answer(call(1, 0, t0_), a);
  EXPECT_EQ(calls, 0);
  a.clear_ranks();
  add_rank_thread(a, 2);
  watches_.answer(call(2, 0, t0_), a);
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.size(), 2u) << "one line for each node's ranks";
}

TEST_F(StepWatchesTest, TheStragglerWatchAsksANodeOnlyWhenItIsOn) {
  for (int pct : {0, 20}) {
    BrokerConfig c;
    c.limits.straggler_pct = pct;
    Recorder out;
    StepState step(config(4, c), out, t0_);
    StepWatches watches(step, effects_, t0_);
    watches.ask_samples(1);
    EXPECT_EQ(out.sent[1].size(), pct > 0 ? 1u : 0u) << "--straggler-pct " << pct;
    EXPECT_EQ(out.last(1).has_sample_ask(), pct > 0);
  }
}

}  // namespace
}  // namespace dp::daemon::test
