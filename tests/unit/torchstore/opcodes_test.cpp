// The opcode tables against PyTorch's enum QueryType (torchstore/README.md).
#include "dp/torchstore/opcodes.hpp"

#include <gtest/gtest.h>

#include <vector>

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

TEST(TorchStoreOpcodes, AnswerBytes) {
  EXPECT_EQ(static_cast<int>(CheckAnswer::ready), 0);
  EXPECT_EQ(static_cast<int>(CheckAnswer::not_ready), 1);
  EXPECT_EQ(static_cast<int>(WaitAnswer::stop_waiting), 0);
  EXPECT_EQ(static_cast<int>(WaitAnswer::wait_canceled), 1);
  EXPECT_EQ(static_cast<int>(WatchEvent::callback_registered), 3);
}

}  // namespace
}  // namespace dp::torchstore
