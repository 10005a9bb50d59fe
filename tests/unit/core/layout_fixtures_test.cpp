// Replays the recorded step environments of tests/fixtures/layouts through
// the layout core's one entry, as srun (--dp-explain) and slurmstepd call it:
// the host list is expanded by libslurm, the rest is the core's. Each
// fixture's expected task lines must come out exactly. The format is in
// tests/README.md; the loader and replay are tests/support/layout_fixture.*.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "fixture_files.hpp"
#include "host_list.hpp"
#include "layout_fixture.hpp"

// ctest shows the parameter: the fixture's name, not its bytes (found by ADL).
namespace dp::test {
void PrintTo(const LayoutFixture& f, std::ostream* os);
void PrintTo(const LayoutFixture& f, std::ostream* os) { *os << f.name; }
}  // namespace dp::test

namespace {

using Fixture = dp::test::LayoutFixture;

std::vector<Fixture> all_fixtures() {
  return dp::test::load_fixture_files(DP_LAYOUT_FIXTURES, dp::test::load_layout_fixture);
}

dp::Result<std::vector<std::string>> slurm_hosts(const std::string& list) {
  return dp::spank::expand_host_list(list.c_str());
}

class Recorded : public ::testing::TestWithParam<Fixture> {};

TEST_P(Recorded, EveryTaskGetsTheRecordedVariables) {
  const Fixture& f = GetParam();
  for (const auto& e : f.errors) ADD_FAILURE() << f.name << ": " << e;
  const auto got = dp::test::replay_layout_fixture(f, slurm_hosts);
  if (!f.refused.empty()) {
    EXPECT_EQ(got.refused.rfind("refused: ", 0), 0u)
        << "expected a refusal containing '" << f.refused << "', got '" << got.refused << "'";
    EXPECT_NE(got.refused.find(f.refused), std::string::npos) << got.refused;
    return;
  }
  ASSERT_EQ(got.refused, "");
  ASSERT_FALSE(f.expected.empty()) << f.name << ": no task lines and no 'refused' line";
  ASSERT_EQ(got.lines.size(), f.expected.size()) << (got.lines.empty() ? "" : got.lines[0]);
  for (size_t i = 0; i < got.lines.size(); ++i) EXPECT_EQ(got.lines[i], f.expected[i]);
  // A hint is expected exactly where the fixture names one.
  if (f.hint.empty()) EXPECT_EQ(got.hint, "");
  else EXPECT_NE(got.hint.find(f.hint), std::string::npos) << got.hint;
}

INSTANTIATE_TEST_SUITE_P(Layouts, Recorded, ::testing::ValuesIn(all_fixtures()),
                         [](const auto& info) { return info.param.name; });

TEST(Recorded, AtLeastElevenShapesAreRecorded) { EXPECT_GE(all_fixtures().size(), 11u); }

}  // namespace
