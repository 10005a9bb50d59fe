// The step's requests alone (step_calls.hpp): set and get, a barrier that
// completes, an abort handed to the Broker as an effect, the step's ports
// only from rank 0's node. A StepState, BlockingCalls and a recording
// StepEffects; no broker.
#include "step_calls.hpp"

#include "dp/master_port.hpp"
#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

using std::chrono::milliseconds;

class StepCallsTest : public StepTest {
 protected:
  StepCallsTest() : StepTest(2) {}
  BlockingCalls blocking_{step_};
  StepCalls calls_{step_, blocking_, effects_};
};

TEST_F(StepCallsTest, ASetWakesABlockingGetOfAnotherRank) {
  rank(1, 0, "h0");
  rank(2, 1, "h1");
  proto::Get get;
  get.set_key("master");
  get.set_blocking(true);
  calls_.get(call(2, 11, t0_), get);
  EXPECT_TRUE(out_.sent[2].empty());
  proto::Set set;
  set.set_key("master");
  set.set_value("h0:29500");
  calls_.set(call(1, 12, t0_ + milliseconds(3)), set);
  EXPECT_EQ(out_.last(1).id(), 12u);
  EXPECT_EQ(out_.last(1).code(), proto::OK);
  EXPECT_EQ(out_.last(2).id(), 11u);
  EXPECT_EQ(out_.last(2).value(), "h0:29500");
}

TEST_F(StepCallsTest, AGetOfAMissingKeyWithoutBlockingIsNotFound) {
  rank(1, 0, "h0");
  proto::Get get;
  get.set_key("nope");
  calls_.get(call(1, 2, t0_), get);
  EXPECT_EQ(out_.last(1).code(), proto::NOT_FOUND);
  EXPECT_NE(out_.last(1).message().find("'nope'"), std::string::npos);
}

TEST_F(StepCallsTest, ABarrierAnswersEveryoneOnceTheWorldArrived) {
  rank(1, 0, "h0");
  rank(2, 1, "h1");
  proto::Barrier b;
  b.set_name("init");
  calls_.barrier(call(1, 5, t0_), b);
  EXPECT_TRUE(out_.sent[1].empty());
  calls_.barrier(call(2, 6, t0_), b);
  EXPECT_EQ(out_.last(1).id(), 5u);
  EXPECT_EQ(out_.last(2).id(), 6u);
}

TEST_F(StepCallsTest, AnAbortIsTheBrokersToCarryOutNamingTheRank) {
  rank(1, 1, "h1");
  proto::Abort a;
  a.set_reason("loss is NaN");
  calls_.abort(call(1, 3, t0_), a);
  ASSERT_EQ(effects_.aborts.size(), 1u);
  EXPECT_EQ(effects_.aborts[0].how, AbortCause::How::explicit_abort);
  EXPECT_EQ(effects_.aborts[0].rank, 1);
  EXPECT_EQ(effects_.aborts[0].message, "job aborted by rank 1 (host h1): loss is NaN");
  EXPECT_EQ(out_.last(1).code(), proto::OK);
}

TEST_F(StepCallsTest, OnlyRankZerosNodeAgentPublishesTheStepsPorts) {
  node(1, 0, "na", {1});
  proto::PublishPorts m;
  calls_.publish_ports(call(1, 4, t0_), m);
  EXPECT_EQ(out_.last(1).code(), proto::UNAUTHORIZED);
  EXPECT_FALSE(step_.store.contains(proto::SPACE_STEP, kStepPortsKey));
}

TEST_F(StepCallsTest, ARanksGoodbyeForgetsItsPeerAndClosesItsLink) {
  rank(1, 0, "h0");
  proto::Goodbye g;
  calls_.goodbye(call(1, 7, t0_), g);
  EXPECT_EQ(out_.last(1).id(), 7u);
  EXPECT_EQ(effects_.forgotten, std::vector<ConnId>{1});
  EXPECT_EQ(out_.closed, std::vector<ConnId>{1});
}

}  // namespace
}  // namespace dp::daemon::test
