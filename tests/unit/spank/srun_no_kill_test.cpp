// srun's --no-kill as srun reads it (SLURM_NO_KILL, then its options, the
// last winning; never a word of the task's command), and --dp-spares spotted
// before srun reads its options (the site's spares_no_kill).
#include "srun_no_kill.hpp"

#include <gtest/gtest.h>

namespace dp::spank {
namespace {

using Words = std::vector<std::string>;

TEST(SrunNoKill, ReadAsSrunReadsIt) {
  const Words cmd = {"python3", "train.py"};
  auto line = [&](Words opts) {
    Words all = {"srun"};
    all.insert(all.end(), opts.begin(), opts.end());
    all.insert(all.end(), cmd.begin(), cmd.end());
    return all;
  };
  EXPECT_FALSE(srun_asks_no_kill(line({"-N3", "--dp-spares=1"}), cmd.size(), nullptr));
  EXPECT_TRUE(srun_asks_no_kill(line({"-N3", "--no-kill"}), cmd.size(), nullptr));
  EXPECT_TRUE(srun_asks_no_kill(line({"-k", "-N3"}), cmd.size(), nullptr));
  EXPECT_TRUE(srun_asks_no_kill(line({"--no-kill=set"}), cmd.size(), nullptr));
  EXPECT_FALSE(srun_asks_no_kill(line({"--no-kill", "--no-kill=off"}), cmd.size(), nullptr));
  EXPECT_TRUE(srun_asks_no_kill(line({}), cmd.size(), "set"));
  EXPECT_FALSE(srun_asks_no_kill(line({"--no-kill=no"}), cmd.size(), "set"));
  EXPECT_FALSE(srun_asks_no_kill(line({}), cmd.size(), "off"));
  // The program's own -k is the program's.
  const Words prog = {"python3", "train.py", "-k"};
  EXPECT_FALSE(
      srun_asks_no_kill({"srun", "-N2", "python3", "train.py", "-k"}, prog.size(), nullptr));
}

TEST(SrunNoKill, SparesAreSpottedOnTheCommandLine) {
  EXPECT_TRUE(words_ask_for_spares({"srun", "-N3", "--dp-spares=1", "true"}));
  EXPECT_TRUE(words_ask_for_spares({"srun", "--dp-spares", "2", "true"}));
  EXPECT_FALSE(words_ask_for_spares({"srun", "-N3", "--dp-world=auto", "true"}));
}

TEST(SrunNoKill, ThisProcesssCommandLine) {
  const Words words = own_command_line();
  ASSERT_FALSE(words.empty());
  EXPECT_NE(words[0].find("dp_spank_edge_tests"), std::string::npos) << words[0];
}

}  // namespace
}  // namespace dp::spank
