// The reply encoders, byte for byte as PyTorch's servers write them (the
// recorded fixtures check them again against real servers).
#include "dp/torchstore/reply.hpp"

#include <gtest/gtest.h>

#include "fixture.hpp"

namespace dp::torchstore {
namespace {

using testing::hex;

TEST(TorchStoreReply, ValueIsLengthThenBytes) {
  EXPECT_EQ(hex(encode_value("v1")), "02000000000000007631");
  EXPECT_EQ(hex(encode_value("")), "0000000000000000");
}

TEST(TorchStoreReply, MultiGetIsTheValuesInOrder) {
  EXPECT_EQ(hex(encode_values({"x", ""})), "0100000000000000780000000000000000");
}

TEST(TorchStoreReply, NumbersAreInt64) {
  EXPECT_EQ(hex(encode_int64(5)), "0500000000000000");
  EXPECT_EQ(hex(encode_int64(-2)), "feffffffffffffff");
}

TEST(TorchStoreReply, OneByteAnswers) {
  EXPECT_EQ(hex(encode_check(CheckAnswer::not_ready)), "01");
  EXPECT_EQ(hex(encode_wait(WaitAnswer::stop_waiting)), "00");
  EXPECT_EQ(hex(encode_wait(WaitAnswer::wait_canceled)), "01");
  EXPECT_EQ(hex(encode_watch_registered()), "03");
}

TEST(TorchStoreReply, PingEchoesTheNonce) { EXPECT_EQ(hex(encode_ping(0x1e)), "1e000000"); }

TEST(TorchStoreReply, QueuePopIsLengthThenValue) {
  EXPECT_EQ(hex(encode_queue_pop(0, std::nullopt)), "0000000000000000");
  EXPECT_EQ(hex(encode_queue_pop(2, "a")),
            "0200000000000000"
            "010000000000000061");
}

TEST(TorchStoreReply, WatchEventIsTypeKeyOldNew) {
  EXPECT_EQ(hex(encode_watch_event(WatchEvent::key_updated, "k", "a", "b")),
            "00"
            "01000000000000006b"
            "010000000000000061"
            "010000000000000062");
}

}  // namespace
}  // namespace dp::torchstore
