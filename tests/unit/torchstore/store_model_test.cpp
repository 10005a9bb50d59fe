// The reference store's semantics, where PyTorch's servers define them
// (torchstore/README.md); what both kinds of server agree on is checked
// against real servers by fixtures_test.cpp.
#include "dp/torchstore/store_model.hpp"

#include <gtest/gtest.h>

#include "dp/torchstore/reply.hpp"

namespace dp::torchstore {
namespace {

Request req(Op op, std::string key = "", std::string value = "") {
  Request r;
  r.op = op;
  r.key = std::move(key);
  r.value = std::move(value);
  return r;
}

Request keyed(Op op, std::vector<std::string> keys) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  return r;
}

Request add(std::string key, int64_t delta) {
  Request r = req(Op::add, std::move(key));
  r.delta = delta;
  return r;
}

Request cas(std::string key, std::string expected, std::string desired) {
  Request r = req(Op::compare_set, std::move(key), std::move(desired));
  r.expected = std::move(expected);
  return r;
}

std::vector<Delivery> to(ConnId conn, std::string bytes) { return {{conn, std::move(bytes)}}; }

TEST(TorchStoreModel, SetGetAddAndNumKeys) {
  StoreModel m;
  EXPECT_TRUE(m.apply(1, req(Op::set, "k", "v")).replies.empty());
  EXPECT_EQ(m.apply(1, req(Op::get, "k")).replies, to(1, encode_value("v")));
  EXPECT_EQ(m.apply(1, add("n", 5)).replies, to(1, encode_int64(5)));
  EXPECT_EQ(m.apply(1, add("n", 0)).replies, to(1, encode_int64(5)));
  EXPECT_EQ(m.value("n"), "5");
  EXPECT_EQ(m.apply(1, req(Op::get_num_keys)).replies, to(1, encode_int64(2)));
}

TEST(TorchStoreModel, CompareSetAsPyTorchAnswersIt) {
  StoreModel m;
  m.apply(1, req(Op::set, "k", "a"));
  EXPECT_EQ(m.apply(1, cas("k", "a", "b")).replies, to(1, encode_value("b")));
  EXPECT_EQ(m.apply(1, cas("k", "zzz", "c")).replies, to(1, encode_value("b")));
  EXPECT_EQ(m.apply(1, cas("new", "", "n")).replies, to(1, encode_value("n")));
  // A missing key with an expected value: the expected value comes back,
  // nothing is stored.
  EXPECT_EQ(m.apply(1, cas("absent", "x", "y")).replies, to(1, encode_value("x")));
  EXPECT_FALSE(m.value("absent"));
}

TEST(TorchStoreModel, WaitIsAnsweredWhenItsLastKeyIsSet) {
  StoreModel m;
  EXPECT_TRUE(m.apply(7, keyed(Op::wait, {"a", "b"})).replies.empty());
  EXPECT_TRUE(m.waiting(7));
  EXPECT_TRUE(m.apply(1, req(Op::set, "a", "1")).replies.empty());
  EXPECT_EQ(
      m.apply(2, add("b", 1)).replies,
      (std::vector<Delivery>{{2, encode_int64(1)}, {7, encode_wait(WaitAnswer::stop_waiting)}}));
  EXPECT_FALSE(m.waiting(7));
  EXPECT_EQ(m.apply(7, keyed(Op::wait, {"a", "b"})).replies,
            to(7, encode_wait(WaitAnswer::stop_waiting)));
  EXPECT_EQ(m.apply(7, keyed(Op::wait, {})).replies, to(7, encode_wait(WaitAnswer::stop_waiting)));
}

TEST(TorchStoreModel, CancelWaitAnswersCanceledAndForgetsTheWait) {
  StoreModel m;
  m.apply(3, keyed(Op::wait, {"never"}));
  EXPECT_EQ(m.apply(3, req(Op::cancel_wait)).replies,
            to(3, encode_wait(WaitAnswer::wait_canceled)));
  EXPECT_TRUE(m.apply(1, req(Op::set, "never", "x")).replies.empty());
}

TEST(TorchStoreModel, DisconnectForgetsWaits) {
  StoreModel m;
  m.apply(3, keyed(Op::wait, {"k"}));
  m.disconnect(3);
  EXPECT_TRUE(m.apply(1, req(Op::set, "k", "x")).replies.empty());
}

TEST(TorchStoreModel, CheckReadyOnlyWhenEveryKeyExists) {
  StoreModel m;
  m.apply(1, req(Op::set, "a", ""));
  EXPECT_EQ(m.apply(1, keyed(Op::check, {"a"})).replies, to(1, encode_check(CheckAnswer::ready)));
  EXPECT_EQ(m.apply(1, keyed(Op::check, {"a", "b"})).replies,
            to(1, encode_check(CheckAnswer::not_ready)));
}

TEST(TorchStoreModel, MissingKeyClosesOnTheClassicServerReadsEmptyOnLibuv) {
  StoreModel classic(ServerKind::classic), uv(ServerKind::libuv);
  for (auto* m : {&classic, &uv}) m->apply(1, req(Op::set, "a", "1"));
  const auto c = classic.apply(1, keyed(Op::multi_get, {"a", "gone", "a"}));
  EXPECT_TRUE(c.close);
  EXPECT_EQ(c.replies, to(1, encode_value("1")));  // what it sent before it failed
  EXPECT_TRUE(classic.apply(1, req(Op::get, "gone")).close);
  const auto u = uv.apply(1, keyed(Op::multi_get, {"a", "gone", "a"}));
  EXPECT_FALSE(u.close);
  EXPECT_EQ(u.replies, to(1, encode_values({"1", "", "1"})));
}

TEST(TorchStoreModel, CompareSetWakesWaitersOnlyOnLibuv) {
  StoreModel classic(ServerKind::classic), uv(ServerKind::libuv);
  for (auto* m : {&classic, &uv}) m->apply(9, keyed(Op::wait, {"k"}));
  EXPECT_EQ(classic.apply(1, cas("k", "", "v")).replies.size(), 1u);
  EXPECT_EQ(
      uv.apply(1, cas("k", "", "v")).replies,
      (std::vector<Delivery>{{1, encode_value("v")}, {9, encode_wait(WaitAnswer::stop_waiting)}}));
}

TEST(TorchStoreModel, AddToTextClosesAndChangesNothing) {
  StoreModel m;
  m.apply(1, req(Op::set, "t", "abc"));
  const auto out = m.apply(1, add("t", 1));
  EXPECT_TRUE(out.close);
  EXPECT_TRUE(out.replies.empty());
  EXPECT_EQ(m.value("t"), "abc");
}

TEST(TorchStoreModel, AddReadsTheValueAsStollDoes) {
  StoreModel m;
  m.apply(1, req(Op::set, "t", " 12abc"));
  EXPECT_EQ(m.apply(1, add("t", 1)).replies, to(1, encode_int64(13)));
  EXPECT_EQ(m.value("t"), "13");
}

TEST(TorchStoreModel, ParseLikeStoll) {
  EXPECT_EQ(parse_like_stoll("42"), 42);
  EXPECT_EQ(parse_like_stoll("\t-7x"), -7);
  EXPECT_EQ(parse_like_stoll("+3"), 3);
  EXPECT_EQ(parse_like_stoll("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_like_stoll("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(parse_like_stoll("9223372036854775808"));
  EXPECT_FALSE(parse_like_stoll(""));
  EXPECT_FALSE(parse_like_stoll("-"));
  EXPECT_FALSE(parse_like_stoll("x1"));
}

TEST(TorchStoreModel, DeleteAnswersHowManyWent) {
  StoreModel m;
  m.apply(1, req(Op::set, "k", "v"));
  EXPECT_EQ(m.apply(1, req(Op::delete_key, "k")).replies, to(1, encode_int64(1)));
  EXPECT_EQ(m.apply(1, req(Op::delete_key, "k")).replies, to(1, encode_int64(0)));
}

TEST(TorchStoreModel, AppendCreatesThenExtends) {
  StoreModel m;
  m.apply(1, req(Op::append, "log", "ab"));
  m.apply(1, req(Op::append, "log", "cd"));
  EXPECT_EQ(m.value("log"), "abcd");
}

TEST(TorchStoreModel, PingEchoes) {
  StoreModel m;
  Request r = req(Op::ping);
  r.number = 1234;
  EXPECT_EQ(m.apply(1, r).replies, to(1, encode_ping(1234)));
}

TEST(TorchStoreModel, QueuesPushPopLenAndWakeOneWaiter) {
  StoreModel m(ServerKind::libuv);
  m.apply(5, keyed(Op::wait, {"q"}));
  m.apply(6, keyed(Op::wait, {"q"}));
  EXPECT_EQ(m.apply(1, req(Op::queue_push, "q", "a")).replies,
            to(5, encode_wait(WaitAnswer::stop_waiting)));
  EXPECT_EQ(m.apply(1, req(Op::queue_push, "q", "b")).replies,
            to(6, encode_wait(WaitAnswer::stop_waiting)));
  EXPECT_EQ(m.apply(1, req(Op::queue_len, "q")).replies, to(1, encode_int64(2)));
  EXPECT_EQ(m.apply(1, keyed(Op::check, {"q"})).replies, to(1, encode_check(CheckAnswer::ready)));
  EXPECT_EQ(m.apply(1, req(Op::queue_pop, "q")).replies, to(1, encode_queue_pop(2, "a")));
  EXPECT_EQ(m.apply(1, req(Op::queue_pop, "q")).replies, to(1, encode_queue_pop(1, "b")));
  EXPECT_EQ(m.apply(1, req(Op::queue_pop, "q")).replies, to(1, encode_queue_pop(0, std::nullopt)));
  EXPECT_EQ(m.num_keys(), 0u);  // queues are no keys
}

TEST(TorchStoreModel, WatchTellsTheCallbackConnectionOfEveryChange) {
  StoreModel m;
  EXPECT_EQ(m.apply(2, req(Op::watch_key, "k")).replies, to(2, encode_watch_registered()));
  EXPECT_EQ(m.apply(1, req(Op::set, "k", "a")).replies,
            to(2, encode_watch_event(WatchEvent::key_created, "k", "", "a")));
  EXPECT_EQ(m.apply(1, cas("k", "a", "b")).replies,
            (std::vector<Delivery>{{2, encode_watch_event(WatchEvent::key_updated, "k", "a", "b")},
                                   {1, encode_value("b")}}));
  EXPECT_EQ(
      m.apply(1, req(Op::delete_key, "k")).replies,
      (std::vector<Delivery>{{1, encode_int64(1)},
                             {2, encode_watch_event(WatchEvent::key_deleted, "k", "b", "")}}));
  m.disconnect(2);
  EXPECT_TRUE(m.apply(1, req(Op::set, "k", "c")).replies.empty());
}

}  // namespace
}  // namespace dp::torchstore
