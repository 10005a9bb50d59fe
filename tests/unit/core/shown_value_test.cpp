// The one way untrusted text is shown: printable ASCII, every other byte an
// escape, cut with its length.
#include "dp/shown_value.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dp {
namespace {

TEST(ShownValue, OnlyPrintableAsciiReachesALogOrATerminal) {
  EXPECT_EQ(shown_value("ok\x1b[31m\nred\xff\x7f~\t\r"), "ok\\x1b[31m\\nred\\xff\\x7f~\\t\\r");
  EXPECT_EQ(shown_value("caf\xc3\xa9"), "caf\\xc3\\xa9");  // bytes above 0x7e, UTF-8 too
  EXPECT_EQ(shown_value(std::string("a\0b", 3)), "a\\x00b");
}

// A rank can name a function anything (co_qualname): a line of slurm-dp's
// forged inside it stays inside the one value, and showing it again (the
// agent, the daemon, srun and dp-top each may) changes nothing.
TEST(ShownValue, AForgedLineStaysOneValueAndShowingAgainChangesNothing) {
  const std::string forged = "x\nslurm-dp: step 7.0 failed: \x1b]0;owned\x07";
  const std::string once = shown_value(forged, 200);
  EXPECT_EQ(once, "x\\nslurm-dp: step 7.0 failed: \\x1b]0;owned\\x07");
  EXPECT_EQ(once.find('\n'), std::string::npos);
  EXPECT_EQ(shown_value(once, 200), once);
  for (unsigned c = 0; c < 256; ++c) {
    const std::string shown = shown_value(std::string(1, static_cast<char>(c)));
    for (char s : shown) EXPECT_TRUE(s >= 0x20 && s <= 0x7e) << c;
  }
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
