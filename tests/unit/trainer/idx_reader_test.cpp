// IDX loading: good files load, every kind of damage gets a clear error.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "dataset.hpp"

namespace dpt {
namespace {

namespace fs = std::filesystem;

// An IDX header: magic (unsigned bytes, rank dimensions), then each size.
std::vector<uint8_t> header(uint8_t rank, std::vector<uint32_t> dims) {
  std::vector<uint8_t> h{0, 0, 0x08, rank};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(d >> s));
  return h;
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dpt-idx-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return p;
  }
  // A valid pair of 3 images of 4x4 and labels.
  void write_valid(const std::string& prefix, uint32_t n = 3) {
    auto img = header(3, {n, 4, 4});
    for (uint32_t i = 0; i < n * 16; ++i) img.push_back(static_cast<uint8_t>(i));
    write_gz(prefix + "-images-idx3-ubyte.gz", img);
    auto lab = header(1, {n});
    for (uint32_t i = 0; i < n; ++i) lab.push_back(static_cast<uint8_t>(i % 10));
    write_gz(prefix + "-labels-idx1-ubyte.gz", lab);
  }
  fs::path dir_;
};

TEST_F(IdxTest, LoadsValidFiles) {
  write_valid("train", 5);
  write_valid("t10k", 3);
  auto d = load_fashion_mnist(dir_.string());
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->train.count, 5u);
  EXPECT_EQ(d->test.count, 3u);
  EXPECT_EQ(d->train.shape.h, 4);
  EXPECT_EQ(d->train.x.size(), 5u * 16);
  EXPECT_EQ(d->train.y[4], 4.0f);
  // Pixel 0 normalises to (0 - mean) / std.
  EXPECT_NEAR(d->train.x[0], -0.2860f / 0.3530f, 1e-5);
  auto limited = load_fashion_mnist(dir_.string(), 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->train.count, 2u);
}

TEST_F(IdxTest, MissingFileNamesPathAndFix) {
  auto d = load_fashion_mnist(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("train-images-idx3-ubyte.gz"), std::string::npos);
  EXPECT_NE(d.error().message.find("--data-dir"), std::string::npos);
}

// Damaged image files: each one read_idx_images refuses, saying what is wrong.
struct ImageRefusal {
  const char* name;
  std::vector<uint8_t> bytes;
  std::vector<std::string> says;
};

std::vector<uint8_t> resized(std::vector<uint8_t> bytes, size_t size) {
  bytes.resize(size);
  return bytes;
}

std::vector<uint8_t> float_elements() {
  auto bytes = header(3, {1, 2, 2});
  bytes[2] = 0x0D;
  return resized(bytes, bytes.size() + 4);
}

const ImageRefusal kImageRefusals[] = {
    {"WrongMagic", float_elements(), {"magic 0x00000d03"}},
    {"LabelsFileAsImages", resized(header(1, {4}), 8 + 4), {"3 dimensions"}},
    {"TruncatedPayload", resized(header(3, {10, 28, 28}), 16 + 100), {"truncated", "7840"}},
    {"TruncatedHeader", resized(header(3, {2, 2, 2}), 9), {"header"}},
};

class IdxImageRefusal : public IdxTest, public ::testing::WithParamInterface<ImageRefusal> {};

TEST_P(IdxImageRefusal, SaysWhy) {
  size_t n = 0;
  int r = 0, c = 0;
  auto res = read_idx_images(write_gz("x.gz", GetParam().bytes), n, r, c);
  ASSERT_FALSE(res.ok());
  for (const std::string& word : GetParam().says)
    EXPECT_NE(res.error().message.find(word), std::string::npos) << res.error().message;
}

INSTANTIATE_TEST_SUITE_P(Idx, IdxImageRefusal, ::testing::ValuesIn(kImageRefusals),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(IdxTest, RefusesTrailingBytes) {
  auto bytes = header(1, {2});
  bytes.insert(bytes.end(), {1, 2, 3});
  size_t n = 0;
  auto res = read_idx_labels(write_gz("x.gz", bytes), n);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("trailing"), std::string::npos);
}

TEST_F(IdxTest, RefusesTruncatedGzipStream) {
  auto bytes = header(1, {50000});
  for (int i = 0; i < 50000; ++i) bytes.push_back(static_cast<uint8_t>((i * 7919) % 10));
  const std::string p = write_gz("x.gz", bytes);
  fs::resize_file(p, fs::file_size(p) / 2);
  size_t n = 0;
  auto res = read_idx_labels(p, n);
  ASSERT_FALSE(res.ok());
  EXPECT_NE(res.error().message.find("x.gz"), std::string::npos) << res.error().message;
}

TEST_F(IdxTest, RefusesCountMismatchAndBadLabels) {
  write_valid("t10k");
  write_valid("train", 3);
  auto lab = header(1, {4});
  lab.insert(lab.end(), {0, 1, 2, 3});
  write_gz("train-labels-idx1-ubyte.gz", lab);
  auto d = load_fashion_mnist(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("3 images but"), std::string::npos) << d.error().message;

  auto bad = header(1, {3});
  bad.insert(bad.end(), {0, 11, 2});
  write_gz("train-labels-idx1-ubyte.gz", bad);
  d = load_fashion_mnist(dir_.string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("label 11 at index 1"), std::string::npos) << d.error().message;
}

TEST(Regression, PointsLieOnTheLine) {
  Dataset d = make_regression(100, 5);
  ASSERT_EQ(d.count, 100u);
  for (size_t i = 0; i < d.count; ++i) {
    EXPECT_GE(d.x[i], -1.0f);
    EXPECT_LE(d.x[i], 1.0f);
    EXPECT_FLOAT_EQ(d.y[i], 0.7f * d.x[i] + 0.3f);
  }
}

}  // namespace
}  // namespace dpt
