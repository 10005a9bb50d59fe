// read_bounded_at: whole files of any length up to the bound, the bound
// itself, and nothing from what cannot be opened or is a symlink.
#include "dp/bounded_read.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace dp {
namespace {

class BoundedRead : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dp-bounded-read.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // Longer than several first reads, with no two 16 KiB blocks alike.
    for (size_t i = 0; text_.size() < 5 * kFirstReadBytes + 123; ++i)
      text_ += std::to_string(i * 7919) + "\n";
    std::ofstream(dir_ + "/f", std::ios::binary) << text_;
  }
  void TearDown() override {
    ::unlink((dir_ + "/f").c_str());
    ::unlink((dir_ + "/link").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string read(size_t max) { return read_bounded_at(AT_FDCWD, (dir_ + "/f").c_str(), max); }
  std::string dir_, text_;
};

TEST_F(BoundedRead, AFileUnderTheBoundIsReadWhole) {
  EXPECT_EQ(read(4 << 20), text_);
  EXPECT_EQ(read(text_.size()), text_);
}

TEST_F(BoundedRead, TheBoundCutsAtExactlyItsBytes) {
  for (size_t max : {size_t{0}, size_t{1}, kFirstReadBytes - 1, kFirstReadBytes,
                     kFirstReadBytes + 1, 3 * kFirstReadBytes + 5, text_.size() - 1}) {
    EXPECT_EQ(read(max), text_.substr(0, max)) << "max " << max;
  }
}

TEST_F(BoundedRead, NothingFromAMissingFileOrASymlink) {
  EXPECT_EQ(read_bounded_at(AT_FDCWD, (dir_ + "/missing").c_str(), 100), "");
  ASSERT_EQ(::symlink((dir_ + "/f").c_str(), (dir_ + "/link").c_str()), 0);
  EXPECT_EQ(read_bounded_at(AT_FDCWD, (dir_ + "/link").c_str(), 100), "");
}

TEST_F(BoundedRead, AProcFileIsReadToItsEnd) {
  // /proc/self/maps comes a page per read(): every line, the last one whole.
  const std::string maps = read_bounded_at(AT_FDCWD, "/proc/self/maps", 4 << 20);
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps.back(), '\n');
  EXPECT_NE(maps.find("[stack]"), std::string::npos);
}

}  // namespace
}  // namespace dp
