// The kernel's per-thread view: its parsers on recorded lines, and this
// test's own threads read live.
#include "dp/stacks/kernel_view.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "dp/unique_fd.hpp"

namespace dp::stacks {
namespace {

TEST(KernelView, StatLinesWithAnyCommand) {
  const std::string tail =
      " S 1 2 3 4 5 6 7 8 9 10 150 25 0 0 20 0 3 0 98765 1000 100 18446744073709551615\n";
  auto s = parse_task_stat("4242 (py ) S (x) d)" + tail);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "py ) S (x) d");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->cpu_ticks, 175u);
  EXPECT_EQ(s->start_ticks, 98765u);
  EXPECT_EQ(s->image_marks, decltype(s->image_marks){});  // a line without them
  EXPECT_FALSE(parse_task_stat("4242 (short) S 1 2 3"));
  EXPECT_FALSE(parse_task_stat("no parenthesis S" + tail));
  EXPECT_FALSE(parse_task_stat("1 (x) SS" + tail.substr(2)));
  EXPECT_FALSE(parse_task_stat("1 (x)" + tail.substr(0, 40)));
  EXPECT_FALSE(parse_task_stat(""));
}

TEST(KernelView, StatLinesTellTheProgramImage) {
  std::string line = "7 (python3) S";  // fields 1-3; field N holds N * 10 from field 4 on
  for (int field = 4; field <= 52; ++field) line += " " + std::to_string(field * 10);
  auto s = parse_task_stat(line + "\n");
  ASSERT_TRUE(s);
  const decltype(s->image_marks) marks{260, 270, 280, 450, 460, 470, 480, 490, 500, 510};
  EXPECT_EQ(s->image_marks, marks);
  EXPECT_EQ(s->start_ticks, 220u);
  std::ifstream self("/proc/self/stat");
  auto own = parse_task_stat(std::string(std::istreambuf_iterator<char>(self), {}));
  ASSERT_TRUE(own);
  EXPECT_NE(own->image_marks[2], 0u);  // the stack's start: shown to its own process
}

TEST(KernelView, SyscallLines) {
  EXPECT_EQ(parse_syscall("202 0x7f0 0x80 0x0 0x0 0x0 0x0 0x7ffd 0x7f1\n"), 202);
  EXPECT_EQ(parse_syscall("running\n"), kNotInSyscall);
  EXPECT_EQ(parse_syscall("-1 0x7ffd 0x7f1\n"), kNotInSyscall);
  EXPECT_EQ(parse_syscall(""), kSyscallUnknown);
  EXPECT_EQ(parse_syscall("x1 2"), kSyscallUnknown);
  EXPECT_EQ(parse_syscall("-7 1"), kSyscallUnknown);
  EXPECT_EQ(syscall_name(SYS_futex), "futex");
  EXPECT_EQ(syscall_name(9999), "syscall 9999");
}

TEST(KernelView, ContextSwitchesOfTheMainThread) {
  EXPECT_EQ(parse_context_switches("Name:\tpython3\nvoluntary_ctxt_switches:\t120\n"
                                   "nonvoluntary_ctxt_switches:\t7\n"),
            127u);
  EXPECT_FALSE(parse_context_switches("Name:\tx\nvoluntary_ctxt_switches:\t1\n"));
  EXPECT_FALSE(
      parse_context_switches("Name:\tx\nvoluntary_ctxt_switches:\tmany\n"
                             "nonvoluntary_ctxt_switches:\t1\n"));
  EXPECT_FALSE(parse_context_switches(""));
}

TEST(KernelView, Descriptions) {
  EXPECT_EQ(describe_kernel_thread({1, "x", 'S', 0, "futex_wait_queue", SYS_futex}),
            "sleeping in futex (futex_wait_queue)");
  EXPECT_EQ(describe_kernel_thread({1, "x", 'R', 0, "", kNotInSyscall}), "running");
  EXPECT_EQ(describe_kernel_thread({1, "x", 'T', 0, "do_signal_stop", kSyscallUnknown}),
            "stopped (do_signal_stop)");
}

TEST(KernelView, ThisProcesssThreadsAsTheKernelTellsThem) {
  std::atomic<int> sleeper_tid{0};
  std::thread sleeper([&] {
    pthread_setname_np(pthread_self(), "dp-sleeper");
    sleeper_tid = static_cast<int>(::gettid());
    std::this_thread::sleep_for(std::chrono::seconds(2));
  });
  while (sleeper_tid == 0) std::this_thread::yield();
  const UniqueFd proc(::open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<KernelThread> threads;
  // Until the sleeper is in its sleep (it may still be naming itself).
  for (int i = 0; i < 100; ++i) {
    threads = read_kernel_threads(proc.get(), 64);
    auto it = std::find_if(threads.begin(), threads.end(),
                           [&](const KernelThread& t) { return t.tid == sleeper_tid; });
    if (it != threads.end() && it->state == 'S' && it->syscall >= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sleeper.join();
  ASSERT_GE(threads.size(), 2u);
  EXPECT_EQ(threads[0].tid, ::getpid());
  EXPECT_EQ(threads[0].state, 'R');  // reading: on a CPU
  auto sleeping = std::find_if(threads.begin(), threads.end(),
                               [&](const KernelThread& t) { return t.tid == sleeper_tid; });
  ASSERT_NE(sleeping, threads.end());
  EXPECT_EQ(sleeping->name, "dp-sleeper");
  EXPECT_EQ(sleeping->state, 'S');
  EXPECT_EQ(syscall_name(sleeping->syscall), "clock_nanosleep");
  EXPECT_EQ(read_kernel_threads(proc.get(), 1).size(), 1u);
}

}  // namespace
}  // namespace dp::stacks
