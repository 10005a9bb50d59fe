#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint.hpp"

namespace dpt {
namespace {

namespace fs = std::filesystem;

TEST(Checkpoint, RoundTripsAndLeavesNoTempFile) {
  const fs::path dir = fs::temp_directory_path() / ("dpt-ck-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "ck.bin").string();
  CheckpointData d;
  d.fingerprint = "model=x";
  d.position = {12, 3, 4};
  d.params = {1.5f, -2.0f, 3.25f};
  d.optimizer_state = {{0.1f, 0.2f, 0.3f}};
  ASSERT_TRUE(write_checkpoint(path, d).ok());
  auto r = read_checkpoint(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->fingerprint, "model=x");
  EXPECT_EQ(r->position.global_step, 12);
  EXPECT_EQ(r->position.epoch, 3);
  EXPECT_EQ(r->position.batch_in_epoch, 4);
  EXPECT_EQ(r->params, d.params);
  EXPECT_EQ(r->optimizer_state, d.optimizer_state);
  size_t files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);

  fs::resize_file(path, fs::file_size(path) - 6);
  auto t = read_checkpoint(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("checksum"), std::string::npos) << t.error().message;

  auto missing = read_checkpoint((dir / "none.bin").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, dp::Errc::not_found);
  fs::remove_all(dir);
}

std::string contents(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Someone who can write the checkpoint's folder plants our temporary name as
// a symlink to a file of ours: the checkpoint must not write through it.
TEST(Checkpoint, NeverWritesThroughAPlantedSymlink) {
  const fs::path dir = fs::temp_directory_path() / ("dpt-ck-link-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path victim = dir / "victim.txt";
  std::ofstream(victim) << "precious";
  const std::string path = (dir / "ck.bin").string();
  const fs::path tmp = path + ".tmp." + std::to_string(::getpid());
  fs::create_symlink(victim, tmp);
  CheckpointData d;
  d.fingerprint = "model=y";
  d.params = {1.0f, 2.0f};
  auto w = write_checkpoint(path, d);
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ(contents(victim), "precious");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)))
      << "the checkpoint is a regular file, not the link";
  EXPECT_FALSE(fs::exists(fs::symlink_status(tmp)));
  auto r = read_checkpoint(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->params, d.params);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dpt
