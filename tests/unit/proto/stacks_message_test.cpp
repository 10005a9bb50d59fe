// A node's ranks' stacks on the wire and back: what the node agent sends is
// what the daemon merges, within the caps whatever the ranks hold.
#include "stacks_message.hpp"

#include "flight_message.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dp::rdv {
namespace {

using stacks::Frame;
using stacks::KernelThread;
using stacks::NoPython;
using stacks::ProcessStacks;
using stacks::ThreadStack;

ProcessStacks python_rank() {
  ProcessStacks p;
  p.pid = 4242;
  p.python = "3.13.5";
  ThreadStack main{4242,  {{"sleeper", "/srv/hang.py", 12}, {"<module>", "/srv/hang.py", 14}},
                   false, {},
                   {},    "time.sleep"};
  main.kernel = KernelThread{4242, "python3", 'S', 17, "hrtimer_nanosleep", 230};
  ThreadStack gloo{4250, {}, false, KernelThread{4250, "gloo", 'S', 3, "futex_wait_queue", 202},
                   {},   {}};
  p.threads = {main, gloo};
  return p;
}

ProcessStacks no_python_rank() {
  ProcessStacks p;
  p.pid = 77;
  p.no_python = stacks::NoStacks{NoPython::debug_build, "a debug build of Python 3.11"};
  p.threads.emplace_back();
  p.threads.back().tid = 77;
  p.threads.back().kernel = KernelThread{77, "python3", 'R', 5, "", -1};
  return p;
}

TEST(StacksMessage, ARankRoundTripsFrameForFrame) {
  const ProcessStacks p = python_rank();
  const auto back = rank_stacks(rank_message(3, p, StackCaps{}), "n2");
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.host, "n2");
  EXPECT_EQ(back.stacks.pid, 4242);
  EXPECT_EQ(back.stacks.python, "3.13.5");
  EXPECT_FALSE(back.stacks.no_python);
  ASSERT_EQ(back.stacks.threads.size(), 2u);
  EXPECT_EQ(back.stacks.threads[0].frames, p.threads[0].frames);
  EXPECT_EQ(back.stacks.threads[0].call, "time.sleep");
  EXPECT_EQ(back.stacks.threads[1].call, "");
  EXPECT_FALSE(back.stacks.threads[0].truncated);
  ASSERT_TRUE(back.stacks.threads[1].kernel);
  const KernelThread& k = *back.stacks.threads[1].kernel;
  EXPECT_EQ(k.tid, 4250);
  EXPECT_EQ(k.name, "gloo");
  EXPECT_EQ(k.state, 'S');
  EXPECT_EQ(k.cpu_ticks, 3u);
  EXPECT_EQ(k.wchan, "futex_wait_queue");
  EXPECT_EQ(k.syscall, 202);
  // The merge sees the same rank as the reader did.
  stacks::RankStacks direct{3, "n2", p};
  EXPECT_EQ(stacks::format_groups(stacks::merge_stacks({back})),
            stacks::format_groups(stacks::merge_stacks({direct})));
}

TEST(StacksMessage, WhyThereAreNoFramesTravelsByName) {
  const auto back = rank_stacks(rank_message(0, no_python_rank(), StackCaps{}), "n1");
  ASSERT_TRUE(back.stacks.no_python);
  EXPECT_EQ(back.stacks.no_python->why, NoPython::debug_build);
  EXPECT_EQ(back.stacks.no_python->detail, "a debug build of Python 3.11");
  ASSERT_EQ(back.stacks.threads.size(), 1u);
  EXPECT_EQ(back.stacks.threads[0].kernel->syscall, stacks::kNotInSyscall);
  const auto lines = stacks::format_groups(stacks::merge_stacks({back}));
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines[0].find("rank 0 (n1, pid 77)"), std::string::npos) << lines[0];
}

TEST(StacksMessage, AnUnknownReasonIsNamedNotTrusted) {
  proto::RankStacks m = rank_message(1, no_python_rank(), StackCaps{});
  m.set_no_python("from_the_future");
  const auto back = rank_stacks(m, "n1");
  ASSERT_TRUE(back.stacks.no_python);
  EXPECT_EQ(back.stacks.no_python->why, NoPython::inconsistent);
  EXPECT_NE(back.stacks.no_python->detail.find("from_the_future"), std::string::npos);
}

TEST(StacksMessage, CapsCutAndMark) {
  ProcessStacks p = python_rank();
  p.threads[0].frames.assign(100, Frame{std::string(1000, 'f'), "x.py", 1});
  StackCaps caps;
  caps.frames_per_thread = 10;
  caps.threads_per_rank = 1;
  caps.text_bytes = 16;
  const auto m = rank_message(5, p, caps);
  ASSERT_EQ(m.threads_size(), 1);
  EXPECT_TRUE(m.threads_cut());
  EXPECT_EQ(m.threads(0).frames_size(), 10);
  EXPECT_TRUE(m.threads(0).truncated());
  EXPECT_EQ(m.threads(0).frames(0).function(), std::string(16, 'f') + "...");
  EXPECT_TRUE(rank_stacks(m, "n").stacks.threads[0].truncated);
}

TEST(StacksMessage, TheAnswerFitsItsBudget) {
  ProcessStacks p = python_rank();
  p.threads[0].frames.assign(64, Frame{std::string(200, 'g'), std::string(200, 'h'), 7});
  NodeStacks node;
  for (int r = 0; r < 8; ++r) node.emplace_back(r, p);
  StackCaps caps;
  caps.answer_bytes = 16 * 1024;
  const auto a = stacks_answer(9, node, caps);
  EXPECT_EQ(a.ask(), 9u);
  EXPECT_LE(a.ByteSizeLong(), caps.answer_bytes);
  ASSERT_EQ(a.ranks_size(), 8);
  EXPECT_LT(a.ranks(0).threads(0).frames_size(), 64);
  EXPECT_TRUE(a.ranks(0).threads(0).truncated());
  // A budget nothing fits: no ranks rather than over it.
  caps.answer_bytes = 8;
  EXPECT_LE(stacks_answer(9, node, caps).ByteSizeLong(), 8u);
}

// A rank's flight-recorder places (issue 57): back as they went, capped.
TEST(FlightMessage, APlaceTravelsAndComesBackCapped) {
  stacks::RankFlight r;
  r.rank = 1;
  r.pid = 4242;
  r.groups.push_back({"0", "default_pg", {0, 1, 2, 3, 8}, 21, 21, "broadcast", false, 31'000});
  for (int i = 0; i < 100; ++i)
    r.arrivals.push_back({"0", i, "all_reduce", 1000LL * i, std::nullopt});
  r.arrivals.back().duration_ms = 2.5;
  const auto back = rank_flight(flight_message(r), "n2");
  EXPECT_EQ(back.host, "n2");
  EXPECT_EQ(back.pid, 4242);
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].ranks, (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(back.groups[0].op, "broadcast");
  EXPECT_EQ(back.groups[0].age_ms, 31'000);
  ASSERT_EQ(back.arrivals.size(), 64u);  // the newest kept
  EXPECT_EQ(back.arrivals.front().seq, 36);
  EXPECT_EQ(back.arrivals.back().duration_ms, 2.5);
  EXPECT_FALSE(back.arrivals.front().duration_ms);
  stacks::RankFlight unread{3, "", 7, std::string(1000, 'x'), {}, {}};
  EXPECT_EQ(rank_flight(flight_message(unread), "n4").unread.size(), 259u);  // 256 and "..."
}

}  // namespace
}  // namespace dp::rdv
