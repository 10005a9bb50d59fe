// /proc/PID/stat parsed by hand: the one parser root and the agent share.
#include "proc_stat.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace dp::agent {
namespace {

// Fields 3..52 of a real zombie's line, with start time 4242 and exit code 9.
std::string stat_line(const std::string& comm, const std::string& exit_code = " 9") {
  std::string s = "123 (" + comm + ") Z 77";
  for (int field = 5; field <= 21; ++field) s += " 0";
  s += " 4242";
  for (int field = 23; field <= 51; ++field) s += " 0";
  return s + exit_code + "\n";
}

TEST(ParseProcStat, CountsFieldsFromTheLastParenthesis) {
  const auto st = parse_proc_stat(stat_line("py ) Z 1 (x"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, 'Z');
  EXPECT_EQ(st->ppid, 77);
  EXPECT_EQ(st->start_ticks, 4242u);
  EXPECT_EQ(st->exit_code, 9);
}

TEST(ParseProcStat, ExitCodeIsAWaitStatus) {
  const auto st = parse_proc_stat(stat_line("python3.11", " 256"));
  ASSERT_TRUE(st && st->exit_code);
  EXPECT_TRUE(WIFEXITED(*st->exit_code));
  EXPECT_EQ(WEXITSTATUS(*st->exit_code), 1);
}

TEST(ParseProcStat, AnOldKernelsLineHasNoExitCode) {
  const auto st = parse_proc_stat(stat_line("a", ""));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->start_ticks, 4242u);
  EXPECT_FALSE(st->exit_code);
}

TEST(ParseProcStat, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("123 (a) Z 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("no parenthesis at all"));
  EXPECT_FALSE(parse_proc_stat(stat_line("a", " x9")));
}

TEST(ProcStat, ThisProcessIsPinnedOnlyWithItsOwnStartTime) {
  const auto start = read_start_ticks(getpid());
  ASSERT_TRUE(start);
  EXPECT_TRUE(pin_process(getpid(), *start));
  EXPECT_FALSE(pin_process(getpid(), *start + 1)) << "another start time: another process";
}

}  // namespace
}  // namespace dp::agent
