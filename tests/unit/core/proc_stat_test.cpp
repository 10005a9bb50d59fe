// /proc/PID/stat parsed by hand: the one parser root, the agent and the
// stack reader share; the user's processes found in one pass.
#include "dp/proc_stat.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace dp {
namespace {

TEST(SplitProcStat, TheCommandRunsToTheLastParenthesis) {
  auto s = split_proc_stat("42 (a ) b) S 1 2\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->command, "a ) b");
  ASSERT_EQ(s->fields.size(), 3u);
  EXPECT_EQ(s->fields[0], "S");
  EXPECT_EQ(s->fields[2], "2");
  EXPECT_FALSE(split_proc_stat("42 S 1 2"));
  EXPECT_FALSE(split_proc_stat(") ("));
}

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

TEST(ProcessesOf, ThisUsersProcessesAndNoOneElses) {
  const auto mine = processes_of(getuid(), 1 << 20);
  EXPECT_NE(std::find(mine.begin(), mine.end(), getpid()), mine.end()) << "this process";
  const auto nobodys = processes_of(65534, 1 << 20);
  EXPECT_EQ(std::find(nobodys.begin(), nobodys.end(), getpid()), nobodys.end());
  EXPECT_LE(processes_of(getuid(), 1).size(), 1u) << "at most its bound";
}

}  // namespace
}  // namespace dp
