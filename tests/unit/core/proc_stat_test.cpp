// /proc/PID/stat parsed by hand: the one parser root, the agent and the
// stack reader share; the user's processes found in one pass.
#include "dp/proc_stat.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
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

// What a keeper ends at a restart (issue 63): a tree whose first child
// ignores SIGTERM, whose grandchild left an orphan behind (the subreaper's
// now) that ignores SIGTERM too and forks a child every few milliseconds.
// SIGTERM ends none of it; kill_descendants ends all of it, the forks too.
TEST(Descendants, AWholeTreeEndsAlsoWhatForksAwayAndIgnoresSigterm) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t root = ::fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (::fork() == 0) {
      ::signal(SIGTERM, SIG_IGN);
      if (::fork() == 0) {
        if (::fork() == 0) {  // the orphan, forking on
          for (;;) {
            if (::fork() == 0) {
              for (;;) ::pause();
            }
            ::usleep(3000);
          }
        }
        ::_exit(0);
      }
      for (;;) ::pause();
    }
    size_t grown = 0;
    for (int i = 0; i < 500 && (grown = descendants(::getpid()).size()) < 6; ++i) ::usleep(10000);
    signal_descendants(::getpid(), SIGTERM);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const size_t after_term = descendants(::getpid()).size();
    kill_descendants(::getpid());
    while (::waitpid(-1, nullptr, 0) > 0) {
    }
    const size_t left = descendants(::getpid()).size();
    const size_t out[3] = {grown, after_term, left};
    [[maybe_unused]] const auto n = ::write(report[1], out, sizeof out);
    ::_exit(0);
  }
  ::close(report[1]);
  size_t got[3] = {0, 0, 99};
  ASSERT_EQ(::read(report[0], got, sizeof got), static_cast<ssize_t>(sizeof got));
  ::waitpid(root, nullptr, 0);
  ::close(report[0]);
  EXPECT_GE(got[0], 6u) << "the tree grew";
  EXPECT_GE(got[1], 3u) << "SIGTERM ended none that ignores it";
  EXPECT_EQ(got[2], 0u) << "kill_descendants left some";
}

}  // namespace
}  // namespace dp
