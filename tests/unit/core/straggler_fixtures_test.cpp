// The straggler rule replayed from recorded blocks (tests/fixtures/straggler:
// the 5 s blocks of real 2x2 PyTorch DDP steps on the test cluster, from
// their reports, by tests/fixtures/straggler/capture): each file's verdicts
// come in order, naming the same ranks and hosts, each by its bound; a file
// that expects none gets none.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dp/straggler.hpp"
#include "fixture_files.hpp"

namespace dp::straggler {
namespace {

struct Expect {
  std::string change, ranks, hosts;
  double by = 0;
};

struct Fixture {
  std::string name;
  std::vector<Block> blocks;
  std::vector<Expect> expects;
  bool none = false;
};
void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }

Fixture load(const std::filesystem::path& path) {
  Fixture f;
  f.name = path.stem().string();
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] == '#') continue;
    if (first == "expect") {
      Expect e;
      std::string by;
      words >> e.change;
      if (e.change == "none") {
        f.none = true;
        continue;
      }
      words >> e.ranks >> e.hosts >> by >> e.by;
      f.expects.push_back(e);
    } else if (first == "block") {
      Block b;
      words >> b.end_s >> b.seconds;
      f.blocks.push_back(b);
    } else if (!f.blocks.empty()) {
      // "rank host waiting looks cpu [input file sleep other]": captures
      // since issue 68 say what a rank waited on besides its collectives.
      RankShare r;
      std::string looks, cpu;
      r.rank = std::stoi(first);
      words >> r.host >> r.waiting >> looks >> cpu;
      r.looks = looks == "exact" ? kExact : std::stod(looks);
      if (cpu != "-") r.cpu = std::stod(cpu);
      words >> r.own.input >> r.own.file >> r.own.sleep >> r.own.other;
      f.blocks.back().ranks.push_back(r);
    }
  }
  return f;
}

std::vector<Fixture> all_fixtures() {
  return dp::test::load_fixture_files(DP_STRAGGLER_FIXTURES, load);
}

std::string joined(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}
std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

class Recorded : public ::testing::TestWithParam<Fixture> {};

TEST_P(Recorded, TheRecordedVerdictsComeByTheirBounds) {
  const Fixture& f = GetParam();
  ASSERT_GE(f.blocks.size(), 10u) << "too short a recording";
  ASSERT_TRUE(f.none != !f.expects.empty()) << "a fixture expects verdicts or none";
  Watch w;
  std::vector<Verdict> got;
  for (const auto& b : f.blocks)
    if (auto v = w.observe(b)) got.push_back(*v);
  std::string lines;
  for (const auto& v : got) lines += "\n  " + std::to_string(v.at_s) + " " + v.line;
  ASSERT_EQ(got.size(), f.expects.size()) << "verdicts:" << lines;
  for (size_t i = 0; i < got.size(); ++i) {
    const Expect& e = f.expects[i];
    EXPECT_EQ(change_name(got[i].change), e.change) << i << lines;
    EXPECT_EQ(joined(got[i].ranks), e.ranks) << i << lines;
    EXPECT_EQ(joined(got[i].hosts), e.hosts) << i << lines;
    EXPECT_LE(got[i].at_s, e.by) << i << lines;
  }
}

INSTANTIATE_TEST_SUITE_P(Straggler, Recorded, ::testing::ValuesIn(all_fixtures()),
                         [](const auto& info) { return info.param.name; });

// Issue 55's five: a slow rank, a slow node, jitter on every rank alike, a
// one-off pause, rank 0's checkpoint (and a healthy step); issue 68's: a rank
// behind its DataLoader and one behind its reads, each step ending with rank
// 0's broadcast, with frames and by the kernel's word alone.
TEST(Recorded, EveryScenarioIsRecorded) {
  std::vector<std::string> names;
  for (const auto& f : all_fixtures()) names.push_back(f.name);
  for (const char* want :
       {"slow_rank_sleep", "slow_rank_busy", "slow_node", "jitter", "pause", "checkpoint", "equal",
        "input_loader", "input_loader_kernel", "input_read", "input_read_kernel"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

// Where the frames said what each rank waited on: the straggler's line says
// it (its DataLoader, its file reads), and no rank but it is ever named.
TEST(Recorded, TheInputRunsNameTheRankAndWhatKeepsIt) {
  for (const auto& f : all_fixtures()) {
    if (f.name != "input_loader" && f.name != "input_read") continue;
    Watch w;
    std::vector<Verdict> got;
    for (const auto& b : f.blocks)
      if (auto v = w.observe(b)) got.push_back(*v);
    ASSERT_EQ(got.size(), 1u) << f.name;
    EXPECT_EQ(got[0].ranks, std::vector<int>{2}) << f.name;
    EXPECT_EQ(got[0].own_on, f.name == "input_loader" ? "input" : "file") << got[0].line;
  }
}

}  // namespace
}  // namespace dp::straggler
