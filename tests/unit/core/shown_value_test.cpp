// The one way untrusted text is shown: printable ASCII, cut with its length.
#include "dp/shown_value.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dp {
namespace {

TEST(ShownValue, OnlyPrintableAsciiReachesALogOrATerminal) {
  EXPECT_EQ(shown_value("ok\x1b[31m\nred\xff\x7f~"), "ok?[31m?red??~");
  EXPECT_EQ(shown_value("caf\xc3\xa9"), "caf??");  // bytes above 0x7e, UTF-8 too
  EXPECT_EQ(shown_value(std::string("a\0b", 3)), "a?b");
}

TEST(ShownValue, ALongValueIsCutSayingHowLongItWas) {
  EXPECT_EQ(shown_value(std::string(100'000, 'a'), 10), "aaaaaaaaaa...(100000 bytes)");
  EXPECT_EQ(shown_value(std::string(64, 'b')), std::string(64, 'b'));
  EXPECT_LT(shown_value(std::string(100'000, 'c')).size(), 100u);
}

TEST(ShownValue, AKeyIsQuotedAndShort) {
  EXPECT_EQ(shown_key("nccl_id"), "'nccl_id'");
  EXPECT_EQ(shown_key(std::string(70, 'k') + "\n"), "'" + std::string(64, 'k') + "...(71 bytes)'");
}

}  // namespace
}  // namespace dp
