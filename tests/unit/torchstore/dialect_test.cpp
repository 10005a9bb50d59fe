// Telling PyTorch 1.13/2.0 from 2.2+ by a connection's first bytes.
#include "dp/torchstore/dialect.hpp"

#include <gtest/gtest.h>

namespace dp::torchstore {
namespace {

Detection detect(const std::string& bytes) {
  auto d = detect_dialect(bytes, 8192);
  EXPECT_TRUE(d) << d.error().message;
  return d ? *d : Detection::need_more;
}

TEST(TorchStoreDialect, ValidateWithTheMagicIsV2) {
  EXPECT_EQ(detect(std::string("\0\xce\xf7\x85\x3c", 5)), Detection::v2);
}

TEST(TorchStoreDialect, AnyOtherFirstByteIsLegacy) {
  EXPECT_EQ(detect("\x03"), Detection::legacy);  // 1.13's ADD "init/"
  EXPECT_EQ(detect("\x05"), Detection::legacy);
}

TEST(TorchStoreDialect, ZeroWaitsForFiveBytes) {
  EXPECT_EQ(detect(""), Detection::need_more);
  EXPECT_EQ(detect(std::string("\0\xce\xf7\x85", 4)), Detection::need_more);
  // A legacy SET of a 2-byte key.
  EXPECT_EQ(detect(std::string("\0\x02\0\0\0", 5)), Detection::legacy);
}

TEST(TorchStoreDialect, WrongMagicIsAnError) {
  auto d = detect_dialect(std::string("\0\xde\xad\xbe\xef", 5), 8192);
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, Errc::protocol);
}

TEST(TorchStoreDialect, MagicWithoutOpcodeIsAnErrorAtAnySplit) {
  EXPECT_EQ(detect("\xce"), Detection::need_more);
  EXPECT_EQ(detect("\xce\xf7\x85"), Detection::need_more);
  EXPECT_FALSE(detect_dialect("\xce\xf7\x85\x3c", 8192));
}

}  // namespace
}  // namespace dp::torchstore
