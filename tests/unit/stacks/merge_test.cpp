// The merge from recorded stacks: a 2x2 step whose rank 3 sleeps while the
// others wait in all_reduce (the shape of issue 45's e2e), threads, ranks
// without Python frames, and the order and wording of the lines.
#include "dp/stacks/merge.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>

namespace dp::stacks {
namespace {

const Frame kMain{"main", "/home/u/hang.py", 30};
const Frame kStep{"step", "/home/u/hang.py", 24};
const Frame kWrapper{"_exception_logger.<locals>.wrapper",
                     "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", 83};
const Frame kAllReduce{
    "all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 3913};
const Frame kSleeper{"main", "/home/u/hang.py", 21};

KernelThread kernel(int tid, char state, int syscall, const std::string& wchan,
                    unsigned long long cpu = 0) {
  return KernelThread{tid, "python3", state, cpu, wchan, syscall};
}

ThreadStack thread(int tid, std::vector<Frame> frames, KernelThread k, std::string call = "") {
  return {.tid = tid,
          .frames = std::move(frames),
          .kernel = std::move(k),
          .innermost_at = std::nullopt,
          .call = std::move(call)};
}

// main_in: the main thread's system call (a wait in a collective: futex);
// calls: what its innermost frame calls.
RankStacks python_rank(int rank, const std::string& host, int pid, std::vector<Frame> main_frames,
                       int main_in = SYS_futex, const std::string& calls = "") {
  ProcessStacks p;
  p.pid = pid;
  p.python = "3.14.8";
  p.threads.push_back(thread(pid, std::move(main_frames), kernel(pid, 'S', main_in, ""), calls));
  // gloo's threads: no Python frames, each rank its own number, in any state.
  for (int i = 1; i <= rank + 1; ++i) {
    p.threads.push_back(thread(pid + i, {}, kernel(pid + i, i % 2 ? 'R' : 'S', SYS_ppoll, "")));
  }
  return {rank, host, std::move(p)};
}

std::vector<RankStacks> hung_step() {
  return {
      python_rank(0, "n1", 1000, {kAllReduce, kWrapper, kStep, kMain}),
      python_rank(1, "n1", 1001, {kAllReduce, kWrapper, kStep, kMain}),
      python_rank(2, "n2", 4240, {kAllReduce, kWrapper, kStep, kMain}),
      python_rank(3, "n2", 4242, {kSleeper, {"<module>", "/home/u/hang.py", 33}},
                  SYS_clock_nanosleep, "time.sleep"),  // a C function: no frame of its own
  };
}

TEST(Merge, TheOddRankLeadsAndTheWaitingRanksShareALine) {
  const auto lines = format_groups(merge_stacks(hung_step()));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "rank 3 (n2, pid 4242): [clock_nanosleep] <- time.sleep <- main hang.py:21 <- "
            "<module> hang.py:33");
  EXPECT_EQ(lines[1],
            "ranks 0-2: [futex] <- all_reduce distributed_c10d.py:3913 <- "
            "_exception_logger.<locals>.wrapper c10d_logger.py:83 <- step hang.py:24 <- "
            "main hang.py:30");
}

TEST(Merge, SmallestGroupsFirstThenLowestRank) {
  auto ranks = hung_step();
  ranks.push_back(python_rank(7, "n4", 70, {kStep, kMain}));
  ranks.push_back(python_rank(5, "n3", 50, {kSleeper}));
  ranks.push_back(python_rank(4, "n3", 40, {kStep, kMain}));
  const auto groups = merge_stacks(ranks);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].ranks, std::vector<int>{3});
  EXPECT_EQ(groups[1].ranks, std::vector<int>{5});
  EXPECT_EQ(groups[2].ranks, (std::vector<int>{4, 7}));
  EXPECT_EQ(groups[3].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(format_groups(groups)[2], "ranks 4,7: [futex] <- step hang.py:24 <- main hang.py:30");
}

TEST(Merge, OtherPythonThreadsArePartOfARanksIdentity) {
  auto ranks = hung_step();
  const std::vector<Frame> waiting{{"Condition.wait", "/usr/lib/python3.14/threading.py", 369},
                                   {"Thread.run", "/usr/lib/python3.14/threading.py", 1024}};
  for (int r : {0, 1}) {
    ranks[r].stacks.threads.push_back(
        thread(9000 + r, waiting, kernel(9000 + r, 'S', SYS_futex, ""), "waiter.acquire"));
    ranks[r].stacks.threads.push_back(
        thread(9100 + r, waiting, kernel(9100 + r, 'S', SYS_futex, ""), "waiter.acquire"));
  }
  const auto lines = format_groups(merge_stacks(ranks));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "rank 2 (n2, pid 4240): [futex] <- all_reduce distributed_c10d.py:3913 <- "
            "_exception_logger.<locals>.wrapper c10d_logger.py:83 <- step hang.py:24 <- "
            "main hang.py:30");
  EXPECT_EQ(lines[1].rfind("rank 3 ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("ranks 0-1: [futex] <- all_reduce", 0), 0u);
  EXPECT_EQ(lines[3],
            "    2 threads: waiter.acquire <- Condition.wait threading.py:369 <- "
            "Thread.run threading.py:1024");
}

// The main thread's system call is part of where a rank is: the same frames
// in another wait are another group; a main thread that runs shows no call.
TEST(Merge, TheMainThreadsSystemCallLeadsItsFrames) {
  auto ranks = hung_step();
  ranks[0] = python_rank(0, "n1", 1000, {kAllReduce, kWrapper, kStep, kMain}, SYS_poll);
  ranks[1].stacks.threads[0].kernel = kernel(1001, 'R', kNotInSyscall, "");
  const auto lines = format_groups(merge_stacks(ranks));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("rank 0 (n1, pid 1000): [poll] <- all_reduce ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("rank 1 (n1, pid 1001): all_reduce ", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("rank 2 (n2, pid 4240): [futex] <- all_reduce ", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("rank 3 (n2, pid 4242): [clock_nanosleep] <- time.sleep <- main ", 0),
            0u)
      << lines[3];
}

TEST(Merge, RanksWithoutPythonFramesAreShownByTheirThreadsKernelState) {
  std::vector<RankStacks> ranks;
  for (int r = 0; r < 3; ++r) {
    ProcessStacks p;
    p.pid = 500 + r;
    p.no_python = NoStacks{NoPython::debug_build, "a debug build of Python 3.11 (python3.X-dbg)"};
    const bool stuck = r == 1;
    p.threads.push_back(thread(p.pid, {},
                               kernel(p.pid, stuck ? 'D' : 'S', stuck ? SYS_read : SYS_futex,
                                      stuck ? "nfs_wait_bit_killable" : "futex_wait", 100 * r)));
    p.threads.push_back(thread(p.pid + 1, {}, kernel(p.pid + 1, 'S', SYS_ppoll, "do_poll")));
    ranks.push_back({r, "n" + std::to_string(r), std::move(p)});
  }
  const auto lines = format_groups(merge_stacks(ranks));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0],
            "rank 1 (n1, pid 501): main thread disk sleep in read (nfs_wait_bit_killable)");
  EXPECT_EQ(lines[1], "    thread: sleeping in ppoll (do_poll)");
  EXPECT_EQ(lines[2],
            "    no Python frames (debug_build): a debug build of Python 3.11 (python3.X-dbg)");
  EXPECT_EQ(lines[3], "ranks 0,2: main thread sleeping in futex (futex_wait)");
}

TEST(Merge, UnreadRanksSayWhy) {
  ProcessStacks p;
  p.pid = 77;
  p.no_python = NoStacks{NoPython::not_allowed, "pid 77 is uid 1001's"};
  const auto lines = format_groups(merge_stacks({{5, "", p}}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "rank 5 (pid 77): no stacks (not_allowed): pid 77 is uid 1001's");
}

TEST(Merge, CutChainsAndUnknownLinesAreMarked) {
  EXPECT_EQ(frames_text({{"f", "a.py", -1}, {"g", "/x/b.py", 2}}, true),
            "f a.py:? <- g b.py:2 <- ...");
  EXPECT_EQ(frames_text({}, true), "...");
  ProcessStacks p;
  p.pid = 9;
  p.python = "3.13.5";
  p.threads.push_back(thread(9, {}, kernel(9, 'R', kNotInSyscall, "")));
  EXPECT_EQ(format_groups(merge_stacks({{0, "h", p}}))[0],
            "rank 0 (h, pid 9): main thread without Python frames, running");
}

// A rank's own text cannot forge a line of ours: a function named
// "x\nslurm-dp: FORGED" with escape sequences (Python 3.13+'s co_qualname is
// the program's to set), a file and a call named so, a path in a reason.
TEST(Merge, ARanksOwnTextIsShownEscaped) {
  const Frame forged{"x\nslurm-dp: step 7.0 failed: FORGED\x1b]0;owned\x07", "/tmp/\x1b[2Jevil.py",
                     3};
  auto r0 = python_rank(0, "n1", 100, {forged, kMain}, SYS_futex, "time.\nsleep");
  auto r1 = python_rank(1, "n\x1b[31m2", 200, {kMain});
  r1.stacks.no_python = NoStacks{NoPython::not_python, "mapped /opt/\x1b[2J\npython"};
  const auto lines = format_groups(merge_stacks({r0, r1}));
  ASSERT_FALSE(lines.empty());
  std::string all;
  for (const auto& l : lines) {
    for (char c : l) ASSERT_TRUE(c >= 0x20 && c <= 0x7e) << l;
    all += l + "|";
  }
  EXPECT_NE(all.find("x\\nslurm\\x2ddp\\x3a\\x20step\\x207."
                     "0\\x20failed\\x3a\\x20FORGED\\x1b\\x5d0\\x3bowned\\x07"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("\\x1b[2Jevil.py:3"), std::string::npos) << all;
  EXPECT_NE(all.find("time.\\nsleep <- "), std::string::npos) << all;
  EXPECT_NE(all.find("n\\x1b[31m2"), std::string::npos) << all;
  EXPECT_NE(all.find("/opt/\\x1b[2J\\npython"), std::string::npos) << all;
  for (const auto& l : lines) EXPECT_NE(l.rfind("slurm-dp:", 0), 0u) << l;
}

TEST(Merge, RankRanges) {
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({4}), "4");
  EXPECT_EQ(rank_ranges({0, 1, 2, 5, 7, 8, 9, 11}), "0-2,5,7-9,11");
  EXPECT_EQ(rank_ranges({3, 4}), "3-4");
}

}  // namespace
}  // namespace dp::stacks
