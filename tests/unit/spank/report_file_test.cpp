// The step report in a folder other users can write: never into a file that
// is not the user's own; new reports are 0600; %u names the user.
#include "report_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace dp::spank {
namespace {

namespace fs = std::filesystem;

class ReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/dp-report-test-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string dir_;
};

TEST(ReportPath, PercentUIsTheUsersName) {
  EXPECT_EQ(expand_report_path("/s/%u/%j.%s.json", "7", "2", "ann"), "/s/ann/7.2.json");
  EXPECT_EQ(expand_report_path("100%%-%x", "7", "2", "ann"), "100%-%x");
  EXPECT_FALSE(current_user_name().empty());
}

TEST_F(ReportFile, ANewReportIsTheUsersAlone) {
  const std::string p = dir_ + "/r.json";
  ASSERT_TRUE(write_report_file(p, "{}\n"));
  struct stat st {};
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(p), "{}\n");
  ASSERT_TRUE(write_report_file(p, "{\"a\":1}\n"));  // the user's own: replaced
  EXPECT_EQ(read(p), "{\"a\":1}\n");
}

TEST_F(ReportFile, AnotherUsersFileIsRefusedNamingItsOwnerAndLeftAlone) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user";
  const std::string p = dir_ + "/r.json";
  std::ofstream(p) << "theirs";
  ASSERT_EQ(chown(p.c_str(), 65534, 65534), 0);
  auto w = write_report_file(p, "{}\n");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("belongs to "), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find("uid 65534"), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find(p), std::string::npos);
  EXPECT_EQ(read(p), "theirs");
}

TEST_F(ReportFile, ALinkOrASecondNameIsRefused) {
  const std::string target = dir_ + "/target";
  std::ofstream(target) << "x";
  fs::create_symlink(target, dir_ + "/sym.json");
  auto w = write_report_file(dir_ + "/sym.json", "{}\n");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("symbolic link"), std::string::npos) << w.error().message;
  fs::create_hard_link(target, dir_ + "/hard.json");
  w = write_report_file(dir_ + "/hard.json", "{}\n");
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("hard link"), std::string::npos) << w.error().message;
  EXPECT_EQ(read(target), "x");
}

TEST_F(ReportFile, AnOverlongPathIsShownCut) {
  // A site pattern can expand to anything; the step's last line stays a line.
  const std::string p = dir_ + "/" + std::string(100'000, 'a');
  auto w = write_report_file(p, "{}\n");
  ASSERT_FALSE(w);
  EXPECT_LT(w.error().message.size(), 1'000u) << w.error().message.substr(0, 300);
  EXPECT_NE(w.error().message.find("bytes)"), std::string::npos) << w.error().message;
}

}  // namespace
}  // namespace dp::spank
