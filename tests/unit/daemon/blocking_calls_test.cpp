// The blocking calls alone (blocking_calls.hpp): a get answered when its key
// is set, a wait timed out, a PyTorch wait given up named. A StepState and a
// recording Outbox; no broker.
#include "blocking_calls.hpp"

#include "step_fixture.hpp"

namespace dp::daemon::test {
namespace {

using std::chrono::milliseconds;

class BlockingCallsTest : public StepTest {
 protected:
  BlockingCalls calls_{step_};
};

TEST_F(BlockingCallsTest, AGetIsAnsweredWhenItsKeyIsSetAndCountsAsFetched) {
  rank(1, 0, "h0");
  calls_.add(call(1, 9, t0_), WaitKind::get, {"master"}, 0);
  calls_.key_changed(proto::SPACE_STEP, "other", t0_);
  EXPECT_TRUE(out_.sent[1].empty()) << "another key";
  ASSERT_TRUE(step_.store.put(proto::SPACE_STEP, "master", "n1:29500"));
  calls_.key_changed(proto::SPACE_STEP, "master", t0_ + milliseconds(5));
  ASSERT_EQ(out_.sent[1].size(), 1u);
  EXPECT_EQ(out_.last(1).id(), 9u);
  EXPECT_EQ(out_.last(1).value(), "n1:29500");
  EXPECT_EQ(step_.calls.size(), 0u);
  EXPECT_TRUE(step_.live.slot(0).fetched);
}

TEST_F(BlockingCallsTest, AWaitPastItsDeadlineFailsWithTimeoutNamingTheKey) {
  rank(1, 0, "h0");
  calls_.add(call(1, 4, t0_), WaitKind::wait, {"ready"}, 500);
  calls_.expire(t0_ + milliseconds(499));
  EXPECT_TRUE(out_.sent[1].empty());
  calls_.expire(t0_ + milliseconds(500));
  ASSERT_EQ(out_.sent[1].size(), 1u);
  EXPECT_EQ(out_.last(1).code(), proto::TIMEOUT);
  EXPECT_NE(out_.last(1).message().find("ready"), std::string::npos) << out_.last(1).message();
}

TEST_F(BlockingCallsTest, ACancelledPyTorchWaitIsDroppedAndItsUnsetKeyNamed) {
  node(1, 0, "na", {0, 1});
  calls_.add(call(1, 3, t0_, proto::SPACE_TORCH), WaitKind::wait, {"rank_1_done"}, 0);
  proto::CancelCall m;
  m.set_request_id(3);
  calls_.cancel(call(1, 8, t0_ + std::chrono::seconds(30)), m);
  ASSERT_EQ(out_.sent[1].size(), 1u) << "the cancel's OK; the call itself is dropped unanswered";
  EXPECT_EQ(out_.last(1).id(), 8u);
  EXPECT_EQ(step_.calls.size(), 0u);
  EXPECT_TRUE(step_.report.unset_waits().empty()) << "listed only once the step failed";
  step_.report.first_failure(2, "nb", AbortCause::How::rank_lost, "rank 2 exited", t0_, {});
  ASSERT_EQ(step_.report.unset_waits().size(), 1u);
  EXPECT_NE(step_.report.unset_waits()[0].find("stopped waiting after 30"), std::string::npos)
      << step_.report.unset_waits()[0];
  EXPECT_NE(step_.report.unset_waits()[0].find("'rank_1_done'"), std::string::npos);
}

TEST_F(BlockingCallsTest, AFailedCallIsAnsweredWithItsCodeOnce) {
  rank(1, 0, "h0");
  calls_.add(call(1, 5, t0_), WaitKind::get, {"k"}, 0);
  const auto ids = step_.calls.ids();
  ASSERT_EQ(ids.size(), 1u);
  calls_.fail(ids[0], proto::ABORTED, "rank 1 failed");
  calls_.fail(ids[0], proto::ABORTED, "rank 1 failed");
  ASSERT_EQ(out_.sent[1].size(), 1u);
  EXPECT_EQ(out_.last(1).code(), proto::ABORTED);
}

}  // namespace
}  // namespace dp::daemon::test
