// The daemon's second key space, PyTorch's store (SPACE_TORCH): the answers
// PyTorch's own server gives, apart from the step's keys, within the step's
// limits. The node agents translate TCPStore clients' requests into these.
#include "broker_fixture.hpp"

namespace dp::daemon {
namespace {

using namespace test;  // NOLINT: the shared fixture

class TorchSpaceTest : public BrokerTest {
 protected:
  TorchSpaceTest() {
    hello(1, 0);
    hello(2, 1);
  }
  // Sends `r` in the torch space from conn and returns the reply.
  proto::Response ask(ConnId conn, proto::Request r) {
    r.set_id(++id_);
    r.set_space(proto::SPACE_TORCH);
    const size_t before = out_.sent[conn].size();
    frame(conn, r, t0_);
    EXPECT_EQ(out_.sent[conn].size(), before + 1) << "no reply to " << r.ShortDebugString();
    return out_.last(conn);
  }
  proto::Response set(const std::string& k, const std::string& v) {
    proto::Request r;
    r.mutable_set()->set_key(k);
    r.mutable_set()->set_value(v);
    return ask(1, r);
  }
  // A WAIT on key from conn with request id `id`, left pending (no reply yet).
  void start_wait(ConnId conn, uint64_t id, const std::string& key) {
    proto::Request w;
    w.set_id(id);
    w.set_space(proto::SPACE_TORCH);
    w.mutable_wait()->add_keys(key);
    frame(conn, w, t0_);
  }
  proto::Response get(const std::string& k) {
    proto::Request r;
    r.mutable_get()->set_key(k);
    return ask(1, r);
  }
  uint64_t id_ = 100;
};

TEST_F(TorchSpaceTest, KeysOfTheTwoSpacesAreApart) {
  set("/k", "torch");
  proto::Request s;
  s.set_id(7);
  s.mutable_set()->set_key("/k");
  s.mutable_set()->set_value("step");
  frame(1, s, t0_);
  EXPECT_EQ(get("/k").value(), "torch");
  proto::Request n;
  n.mutable_num_keys();
  EXPECT_EQ(ask(2, n).number(), 1);
  proto::Request g;
  g.set_id(8);
  g.mutable_get()->set_key("/k");
  frame(2, g, t0_);
  EXPECT_EQ(out_.last(2).value(), "step");
}

TEST_F(TorchSpaceTest, CompareAndSetAnswersAsPyTorchsServer) {
  proto::Request c;
  auto* m = c.mutable_compare_and_set();
  m->set_key("/c");
  m->set_expected("x");
  m->set_desired("y");
  // Missing key, expected not empty: the expected value comes back, nothing is set.
  EXPECT_EQ(ask(1, c).value(), "x");
  EXPECT_EQ(get("/c").code(), proto::NOT_FOUND);
  m->set_expected("");
  EXPECT_EQ(ask(1, c).value(), "y");  // missing and expected empty: set
  m->set_expected("nope");
  m->set_desired("z");
  EXPECT_EQ(ask(1, c).value(), "y");  // no match: the current value
  m->set_expected("y");
  EXPECT_EQ(ask(1, c).value(), "z");
}

TEST_F(TorchSpaceTest, DeleteAnswersHowManyKeysWent) {
  set("/d", "1");
  proto::Request e;
  e.mutable_erase()->set_key("/d");
  EXPECT_EQ(ask(1, e).number(), 1);
  const auto again = ask(1, e);
  EXPECT_EQ(again.code(), proto::OK);
  EXPECT_EQ(again.number(), 0);
}

TEST_F(TorchSpaceTest, AppendCheckMultiGetMultiSet) {
  proto::Request a;
  a.mutable_append()->set_key("/a");
  a.mutable_append()->set_value("ab");
  EXPECT_EQ(ask(1, a).code(), proto::OK);
  a.mutable_append()->set_value("cd");
  ask(1, a);
  EXPECT_EQ(get("/a").value(), "abcd");

  proto::Request ms;
  ms.mutable_multi_set()->add_keys("/m1");
  ms.mutable_multi_set()->add_keys("/m2");
  ms.mutable_multi_set()->add_values("1");
  ms.mutable_multi_set()->add_values("2");
  EXPECT_EQ(ask(2, ms).code(), proto::OK);

  proto::Request ch;
  ch.mutable_check()->add_keys("/m1");
  ch.mutable_check()->add_keys("/a");
  EXPECT_TRUE(ask(1, ch).flag());
  ch.mutable_check()->add_keys("/none");
  EXPECT_FALSE(ask(1, ch).flag());

  proto::Request mg;
  mg.mutable_multi_get()->add_keys("/m2");
  mg.mutable_multi_get()->add_keys("/m1");
  const auto got = ask(1, mg);
  ASSERT_EQ(got.values_size(), 2);
  EXPECT_EQ(got.values(0), "2");
  EXPECT_EQ(got.values(1), "1");
  mg.mutable_multi_get()->add_keys("/none");
  EXPECT_EQ(ask(1, mg).code(), proto::NOT_FOUND);

  ms.mutable_multi_set()->add_keys("/m3");  // three keys, two values
  EXPECT_EQ(ask(2, ms).code(), proto::INVALID_ARGUMENT);
}

TEST_F(TorchSpaceTest, AWaitInOneSpaceIsNotWokenByTheOther) {
  const size_t before = out_.sent[2].size();
  start_wait(2, 50, "/w");
  EXPECT_EQ(out_.sent[2].size(), before);  // waiting
  proto::Request s;
  s.set_id(51);
  s.mutable_set()->set_key("/w");
  s.mutable_set()->set_value("step");
  frame(1, s, t0_);  // the step's key of that name
  EXPECT_EQ(out_.sent[2].size(), before);
  set("/w", "torch");
  ASSERT_EQ(out_.sent[2].size(), before + 1);
  EXPECT_EQ(out_.last(2).id(), 50u);
  EXPECT_EQ(out_.last(2).code(), proto::OK);
}

TEST_F(TorchSpaceTest, ACancelledWaitIsDroppedUnanswered) {
  start_wait(2, 90, "/never");
  proto::Request c;
  c.mutable_cancel_call()->set_request_id(90);
  EXPECT_EQ(ask(2, c).code(), proto::OK);
  const size_t before = out_.sent[2].size();
  set("/never", "now");
  EXPECT_EQ(out_.sent[2].size(), before);  // the wait is gone: no answer
}

// PyTorch's timeout names neither the keys nor who never set them: the
// daemon does, once per key, once the step failed; a healthy step's timed
// waits were the program's choice and are no news (issue 43).
TEST_F(TorchSpaceTest, AGivenUpWaitIsNamedWithItsKeysOnceTheStepFails) {
  using namespace std::chrono_literals;
  start_wait(2, 91, "/nccl_id");
  proto::Request c;
  c.set_id(92);
  c.set_space(proto::SPACE_TORCH);
  c.mutable_cancel_call()->set_request_id(91);
  testing::internal::CaptureStderr();
  frame(2, c, t0_ + 30s);
  start_wait(2, 93, "/nccl_id");
  c.set_id(94);
  c.mutable_cancel_call()->set_request_id(93);
  frame(2, c, t0_ + 40s);  // the same key again: not named twice
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(log.find("never set"), log.npos) << log;  // a healthy step: no news
  EXPECT_EQ(broker_.pending_calls(), 0u);
  EXPECT_EQ(broker_.stats().store_waits_unset_size(), 0);
  EXPECT_EQ(broker_.stats().report_json().find("never set"), std::string::npos);
  testing::internal::CaptureStderr();
  broker_.on_disconnect(1, t0_ + 50s);  // rank 0 dropped: the step failed
  log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("rank 1 (host h1) stopped waiting after 30.0 s for '/nccl_id', never set; "
                     "no rank of the step has failed"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("40.0 s"), log.npos) << log;
  // srun prints the report's lines at the step's end.
  const proto::Stats st = broker_.stats();
  ASSERT_EQ(st.store_waits_unset_size(), 1);
  EXPECT_NE(st.store_waits_unset(0).find("'/nccl_id', never set"), std::string::npos);
  EXPECT_NE(st.report_json().find("\"store_waits_unset\":[\"PyTorch's store: rank 1"),
            std::string::npos)
      << st.report_json();
}

// When the step fails, the store's waits stay (survivors under
// --dp-on-failure=keep go on using it) and are named with the failure.
TEST_F(TorchSpaceTest, WaitsPendingWhenTheStepFailsStayAndAreNamed) {
  set("/present", "x");
  proto::Request w;
  w.set_id(95);
  w.set_space(proto::SPACE_TORCH);
  w.mutable_wait()->add_keys("/present");
  w.mutable_wait()->add_keys("/absent");
  frame(1, w, t0_);
  const size_t before = out_.sent[1].size();
  testing::internal::CaptureStderr();
  broker_.on_disconnect(2, t0_);  // rank 1 dropped: the step's first failure
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(broker_.aborted());
  EXPECT_NE(
      log.find("rank 0 (host h0) waiting 0.0 s for '/absent', never set; first failure: rank 1 "
               "(host h1)"),
      std::string::npos)
      << log;
  EXPECT_EQ(log.find("'/present'"), log.npos) << log;  // only what is missing
  EXPECT_EQ(broker_.pending_calls(), 1u);
  proto::Request late;
  late.set_id(97);
  late.set_space(proto::SPACE_TORCH);
  late.mutable_set()->set_key("/absent");
  late.mutable_set()->set_value("late");
  frame(1, late, t0_);  // a survivor sets it: the wait is answered
  ASSERT_GT(out_.sent[1].size(), before);
  bool answered = false;
  for (size_t i = before; i < out_.sent[1].size(); ++i)
    answered |= out_.sent[1][i].id() == 95u && out_.sent[1][i].code() == proto::OK;
  EXPECT_TRUE(answered);
}

TEST_F(TorchSpaceTest, QueuesPushPopLenAndWakeWaiters) {
  start_wait(2, 60, "/q");
  proto::Request push;
  push.mutable_queue_push()->set_key("/q");
  push.mutable_queue_push()->set_value("first");
  ask(1, push);
  EXPECT_EQ(out_.last(2).id(), 60u);  // a queue with an item counts as its key being set
  push.mutable_queue_push()->set_value("second");
  ask(1, push);
  proto::Request len;
  len.mutable_queue_len()->set_key("/q");
  EXPECT_EQ(ask(1, len).number(), 2);
  proto::Request pop;
  pop.mutable_queue_pop()->set_key("/q");
  auto first = ask(1, pop);
  EXPECT_EQ(first.value(), "first");
  EXPECT_EQ(first.number(), 2);  // the length before the pop, as PyTorch answers
  EXPECT_EQ(ask(1, pop).value(), "second");
  const auto empty = ask(1, pop);
  EXPECT_EQ(empty.code(), proto::OK);
  EXPECT_EQ(empty.number(), 0);
  EXPECT_TRUE(empty.value().empty());
  EXPECT_EQ(ask(1, len).number(), 0);
}

// Wait.value (a node agent's WAIT for PyTorch's get()): the answer brings
// the key's value, at once or when it is set; none for a queue's name (its
// WAIT is answered by an item, as PyTorch's) or a wait of several keys.
TEST_F(TorchSpaceTest, AWaitAskedWithValueBringsTheKeysValue) {
  const auto wait = [](std::vector<std::string> keys) {
    proto::Request w;
    for (auto& k : keys) w.mutable_wait()->add_keys(k);
    w.mutable_wait()->set_value(true);
    return w;
  };
  set("/id", "ID");
  auto now = ask(2, wait({"/id"}));
  ASSERT_EQ(now.values_size(), 1);
  EXPECT_EQ(now.values(0), "ID");
  proto::Request later = wait({"/late"});
  later.set_id(70);
  later.set_space(proto::SPACE_TORCH);
  frame(2, later, t0_);
  EXPECT_EQ(broker_.pending_calls(), 1u);
  set("/late", "L");
  EXPECT_EQ(out_.last(2).id(), 70u);
  ASSERT_EQ(out_.last(2).values_size(), 1);
  EXPECT_EQ(out_.last(2).values(0), "L");
  proto::Request push;
  push.mutable_queue_push()->set_key("/q");
  push.mutable_queue_push()->set_value("item");
  ask(1, push);
  const auto queued = ask(2, wait({"/q"}));
  EXPECT_EQ(queued.code(), proto::OK);
  EXPECT_EQ(queued.values_size(), 0);
  const auto two = ask(2, wait({"/id", "/late"}));
  EXPECT_EQ(two.code(), proto::OK);
  EXPECT_EQ(two.values_size(), 0);
  proto::Request plain;
  plain.mutable_wait()->add_keys("/id");
  EXPECT_EQ(ask(2, plain).values_size(), 0);  // not asked: as before
}

TEST_F(TorchSpaceTest, AddReadsValuesAsPyTorchDoesAndWraps) {
  set("/n", " 12abc");  // std::stoll: leading blanks, then digits; the rest ignored
  proto::Request a;
  a.mutable_add()->set_key("/n");
  a.mutable_add()->set_delta(1);
  EXPECT_EQ(ask(1, a).number(), 13);
  set("/n", std::to_string(INT64_MAX));
  EXPECT_EQ(ask(1, a).number(), INT64_MIN);
  set("/n", "x");
  EXPECT_EQ(ask(1, a).code(), proto::INVALID_ARGUMENT);
}

TEST_F(TorchSpaceTest, PyTorchsStoreIsServedAfterTheStepFailed) {
  set("/nccl", "id");
  broker_.on_disconnect(2, t0_);  // rank 1 dropped: the step is aborted
  ASSERT_TRUE(broker_.aborted());
  EXPECT_EQ(get("/nccl").value(), "id");
  proto::Request s;
  s.set_id(80);
  s.mutable_get()->set_key("k");
  frame(1, s, t0_);
  EXPECT_EQ(out_.last(1).code(), proto::ABORTED);  // the step's own keys are not
}

TEST_F(TorchSpaceTest, TorchOperationsAreRefusedInTheStepsSpace) {
  proto::Request a;
  a.set_id(70);
  a.mutable_num_keys();
  frame(1, a, t0_);
  EXPECT_EQ(out_.last(1).code(), proto::PROTOCOL);
  EXPECT_NE(out_.last(1).message().find("SPACE_TORCH"), std::string::npos);
  proto::Request bad;
  bad.set_id(71);
  bad.set_space(static_cast<proto::Space>(9));
  bad.mutable_get()->set_key("k");
  frame(1, bad, t0_);
  EXPECT_EQ(out_.last(1).code(), proto::PROTOCOL);
  EXPECT_NE(out_.last(1).message().find("unknown key space 9"), std::string::npos);
}

TEST_F(BrokerTest, BothKeySpacesShareTheStepsByteLimit) {
  BrokerConfig c = config(2);
  c.limits.max_total_bytes = 100;
  Broker& b = other_broker(c, hello_req(0, proto::ROLE_RANK, "h0"));
  auto put = [&](uint64_t id, proto::Space space, const std::string& key) {
    proto::Request s;
    s.set_id(id);
    s.set_space(space);
    s.mutable_set()->set_key(key);
    s.mutable_set()->set_value(std::string(40, 'v'));
    b.on_frame(1, s.SerializeAsString(), t0_);
    return other_out_.last(1);
  };
  EXPECT_EQ(put(2, proto::SPACE_STEP, "k1").code(), proto::OK);
  EXPECT_EQ(put(3, proto::SPACE_TORCH, "k2").code(), proto::OK);
  const auto over = put(4, proto::SPACE_TORCH, "k3");
  EXPECT_EQ(over.code(), proto::LIMIT);
  EXPECT_NE(over.message().find("--max-total-bytes"), std::string::npos);
}

}  // namespace
}  // namespace dp::daemon
