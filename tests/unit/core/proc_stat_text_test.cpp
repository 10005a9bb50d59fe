// The one splitter of /proc/PID/stat: a command with spaces and ')' in it.
#include "dp/proc_stat_text.hpp"

#include <gtest/gtest.h>

namespace dp {
namespace {

TEST(ProcStatText, TheCommandRunsToTheLastParenthesis) {
  auto s = split_proc_stat("42 (a ) b) S 1 2\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->command, "a ) b");
  ASSERT_EQ(s->fields.size(), 3u);
  EXPECT_EQ(s->fields[0], "S");
  EXPECT_EQ(s->fields[2], "2");
  EXPECT_FALSE(split_proc_stat("42 S 1 2"));
  EXPECT_FALSE(split_proc_stat(") ("));
}

}  // namespace
}  // namespace dp
