// The opcode tables against PyTorch's enum QueryType (torchstore/README.md).
#include "dp/torchstore/opcodes.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "dp/torchstore/request.hpp"
#include "dp/torchstore/store_model.hpp"

namespace dp::torchstore {
namespace {

std::vector<std::string> names(Dialect d) {
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b)
    if (auto op = op_from_byte(d, static_cast<uint8_t>(b))) out.push_back(op_name(*op));
  return out;
}

TEST(TorchStoreOpcodes, LegacyIsPyTorch113sQueryType) {
  EXPECT_EQ(names(Dialect::legacy),
            (std::vector<std::string>{"SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT",
                                      "GETNUMKEYS", "WATCH_KEY", "DELETE_KEY"}));
}

TEST(TorchStoreOpcodes, V2IsPyTorch28sQueryType) {
  EXPECT_EQ(
      names(Dialect::v2),
      (std::vector<std::string>{"VALIDATE", "SET", "COMPARE_SET", "GET", "ADD", "CHECK", "WAIT",
                                "GETNUMKEYS", "DELETE_KEY", "APPEND", "MULTI_GET", "MULTI_SET",
                                "CANCEL_WAIT", "PING", "QUEUE_PUSH", "QUEUE_POP", "QUEUE_LEN"}));
}

TEST(TorchStoreOpcodes, ByteAndOpAreInverse) {
  for (Dialect d : {Dialect::legacy, Dialect::v2})
    for (int b = 0; b < 256; ++b)
      if (auto op = op_from_byte(d, static_cast<uint8_t>(b))) {
        EXPECT_EQ(op_byte(d, *op), b);
      }
  EXPECT_FALSE(op_byte(Dialect::legacy, Op::append));
  EXPECT_FALSE(op_byte(Dialect::legacy, Op::ping));
  EXPECT_FALSE(op_byte(Dialect::v2, Op::watch_key));
}

TEST(TorchStoreOpcodes, DescriptionsNameTheByte) {
  EXPECT_EQ(describe_opcode(Dialect::v2, 13), "PING (0x0d)");
  EXPECT_EQ(describe_opcode(Dialect::legacy, 7), "WATCH_KEY (0x07)");
  EXPECT_EQ(describe_opcode(Dialect::legacy, 13), "unknown opcode 0x0d");
  EXPECT_NE(describe_opcode(Dialect::v2, 18).find("BARRIER"), std::string::npos);
}

std::vector<Op> ops_where(bool (*pick)(const OpInfo&)) {
  std::vector<Op> out;
  for (const OpInfo& row : all_ops())
    if (pick(row)) out.push_back(row.op);
  return out;
}

TEST(TorchStoreOpcodes, TheTableHasARowPerOpInEveryDialectItServes) {
  for (size_t i = 0; i < kOpCount; ++i) {
    const OpInfo& row = op_info(static_cast<Op>(i));
    EXPECT_EQ(row.op, static_cast<Op>(i));
    EXPECT_TRUE(row.legacy >= 0 || row.v2 >= 0) << row.name << " in no dialect";
  }
}

// The node agent answers only what needs no store; reads fold, writes queue.
TEST(TorchStoreOpcodes, RoutesOfTheNodeAgent) {
  EXPECT_EQ(ops_where([](const OpInfo& r) { return r.route == Route::local; }),
            (std::vector<Op>{Op::validate, Op::watch_key, Op::cancel_wait, Op::ping}));
  EXPECT_EQ(ops_where([](const OpInfo& r) { return r.route == Route::read; }),
            (std::vector<Op>{Op::get, Op::add, Op::check, Op::wait, Op::get_num_keys, Op::multi_get,
                             Op::queue_len}));
  // No reply: only writes (a read's rider waits for one).
  for (const OpInfo& row : all_ops())
    if (row.answer == Answer::none) {
      EXPECT_NE(row.route, Route::read) << row.name;
    }
}

// resend: PyTorch's own server, given the request twice, ends in the same
// store and answers the second time as the first. The one false beyond
// those: COMPARE_SET, the same twice in a row, but a resend after another
// client's write can swap again what the first already swapped (ABA), and
// torchelastic's rendezvous state lives on it.
TEST(TorchStoreOpcodes, ResendIsTrueExactlyWhereTwiceIsOnce) {
  const ConnId conn = 1;
  for (const OpInfo& row : all_ops()) {
    if (row.route == Route::local) {
      EXPECT_FALSE(row.resend) << row.name << " never goes to the daemon";
      continue;
    }
    Request r;
    r.op = row.op;
    r.key = row.op == Op::add ? "n" : "k";
    r.value = "v2";
    r.expected = "v1";
    r.delta = 1;
    r.keys = {"k", "j"};
    r.values = {"v2", "w"};
    auto seeded = [&] {
      StoreModel m;
      for (const char* k : {"k", "j"}) m.apply(conn, Request{Op::set, k, "v1", {}, 0, 0, {}, {}});
      m.apply(conn, Request{Op::set, "n", "1", {}, 0, 0, {}, {}});
      for (const char* v : {"a", "b"})
        m.apply(conn, Request{Op::queue_push, "q", v, {}, 0, 0, {}, {}});
      return m;
    };
    if (row.op == Op::queue_push || row.op == Op::queue_pop || row.op == Op::queue_len) r.key = "q";
    StoreModel once = seeded(), twice = seeded();
    const Outcome first = once.apply(conn, r);
    twice.apply(conn, r);
    const Outcome second = twice.apply(conn, r);
    const bool same = first.replies == second.replies && once.value(r.key) == twice.value(r.key) &&
                      once.num_keys() == twice.num_keys() &&
                      once.queue_length("q") == twice.queue_length("q");
    EXPECT_EQ(row.resend, same && row.op != Op::compare_set) << row.name;
  }
}

TEST(TorchStoreOpcodes, AnswerBytes) {
  EXPECT_EQ(static_cast<int>(CheckAnswer::ready), 0);
  EXPECT_EQ(static_cast<int>(CheckAnswer::not_ready), 1);
  EXPECT_EQ(static_cast<int>(WaitAnswer::stop_waiting), 0);
  EXPECT_EQ(static_cast<int>(WaitAnswer::wait_canceled), 1);
  EXPECT_EQ(static_cast<int>(WatchEvent::callback_registered), 3);
}

}  // namespace
}  // namespace dp::torchstore
