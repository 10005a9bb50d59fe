// The straggler watch's looks (dp/stacks/straggler_samples.hpp): what a
// look counts, from the kernel's state and call; live children blocked in
// futex, asleep in pause and running, looked at from outside; and where a
// read with Python frames says the others wait.
#include "dp/stacks/straggler_samples.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "dp/stacks/kernel_view.hpp"
#include "dp/unique_fd.hpp"

// Its own namespace: the unity build puts this file beside others of the suite.
namespace dp::stacks::straggler_samples_test {
namespace {

TEST(StragglerLooks, WhatALookCounts) {
  EXPECT_EQ(classify_look('S', SYS_futex), Look::waiting);
  EXPECT_EQ(classify_look('R', kNotInSyscall), Look::running);
  EXPECT_EQ(classify_look('S', SYS_clock_nanosleep), Look::elsewhere);  // time.sleep
  EXPECT_EQ(classify_look('S', SYS_poll), Look::elsewhere);             // a data loader's pipe
  EXPECT_EQ(classify_look('D', SYS_read), Look::elsewhere);             // a slow disk
  EXPECT_EQ(classify_look('S', kSyscallUnknown), Look::elsewhere);
  EXPECT_EQ(classify_look('T', SYS_futex), Look::none);  // a suspended job
  EXPECT_EQ(classify_look('t', SYS_futex), Look::none);
  EXPECT_EQ(classify_look('Z', kNotInSyscall), Look::none);
  LookCounts c;
  c.add({'S', SYS_futex, 10, 1});
  c.add({'R', kNotInSyscall, 12, 1});
  c.add({'S', SYS_clock_nanosleep, 12, 1});
  c.add({'T', SYS_futex, 13, 1});
  EXPECT_EQ(c.looks, 3u);
  EXPECT_EQ(c.waiting, 1u);
  EXPECT_EQ(c.running, 1u);
  EXPECT_EQ(c.cpu_ticks, 13u);
}

// A child that does `what` until killed.
pid_t child(void (*what)()) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    what();
    ::_exit(0);
  }
  return pid;
}

void futex_wait() {
  int word = 0;
  for (;;) ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
}
void pause_forever() {
  for (;;) ::pause();
}
void spin() {
  for (;;) asm volatile("" ::: "memory");  // a loop the compiler keeps
}

// Looks at pid until it shows `want` (a child needs a moment to get there), at most 5 s.
Look look_until(pid_t pid, Look want, ProcessLook* last) {
  const UniqueFd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY));
  const LookFiles files(dir.get());
  Look seen = Look::none;
  for (int i = 0; i < 500 && seen != want; ++i) {
    const auto l = files.look();
    if (l) {
      *last = *l;
      seen = classify_look(l->state, l->syscall);
    }
    if (seen != want) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return seen;
}

TEST(StragglerLooks, LiveChildrenFromOutside) {
  const struct {
    void (*what)();
    Look want;
  } cases[] = {
      {futex_wait, Look::waiting}, {pause_forever, Look::elsewhere}, {spin, Look::running}};
  for (const auto& c : cases) {
    const pid_t pid = child(c.what);
    ASSERT_GT(pid, 0);
    ProcessLook last;
    EXPECT_EQ(look_until(pid, c.want, &last), c.want)
        << "state " << last.state << " syscall " << last.syscall;
    EXPECT_GT(last.start_ticks, 0u);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  // Gone: the files stay bound to the dead process, never to a reused pid.
  const pid_t pid = child(pause_forever);
  const UniqueFd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY));
  const LookFiles files(dir.get());
  ASSERT_TRUE(files);
  ASSERT_TRUE(files.look().has_value());
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_FALSE(files.look().has_value());
}

// A frames read counts only if the rank slept through it: asleep at both
// looks, in one syscall, never woken between (a rank that left its
// collective's futex for its sleep during the read would lend the sleep's
// frames to its futex).
TEST(StragglerLooks, AReadCountsOnlyIfTheRankSleptThroughIt) {
  const ProcessLook futex{'S', SYS_futex, 5, 9, 100};
  EXPECT_TRUE(slept_through(futex, futex));
  EXPECT_FALSE(slept_through(futex, {'S', SYS_clock_nanosleep, 5, 9, 101}))
      << "moved on to its sleep";
  EXPECT_FALSE(slept_through(futex, {'S', SYS_futex, 5, 9, 102})) << "woke, waits again";
  EXPECT_FALSE(slept_through(futex, {'R', kNotInSyscall, 6, 9, 101})) << "running";
  EXPECT_FALSE(slept_through(futex, {'S', SYS_futex, 5, 8, 100})) << "another process";
  EXPECT_FALSE(slept_through(futex, {'T', SYS_futex, 5, 9, 100})) << "stopped";
  EXPECT_FALSE(slept_through({'S', SYS_futex, 5, 9, std::nullopt}, futex)) << "no count: no proof";
}

int g_woken_pipe = -1;
void on_usr1(int) {
  const char c = 'w';
  (void)!::write(g_woken_pipe, &c, 1);
}

// Live: a child asleep in pause sleeps through two close looks; woken by a
// signal in between and back in pause, it did not.
TEST(StragglerLooks, CloseLooksSeeAWakeBetween) {
  int woken[2];
  ASSERT_EQ(::pipe(woken), 0);
  g_woken_pipe = woken[1];
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGUSR1, on_usr1);
    const char c = 'r';
    (void)!::write(woken[1], &c, 1);
    pause_forever();
  }
  ASSERT_GT(pid, 0);
  char c = 0;
  ASSERT_EQ(::read(woken[0], &c, 1), 1);  // its handler is in
  ProcessLook last;
  ASSERT_EQ(look_until(pid, Look::elsewhere, &last), Look::elsewhere);
  const UniqueFd dir(::open(("/proc/" + std::to_string(pid)).c_str(), O_RDONLY | O_DIRECTORY));
  const LookFiles files(dir.get());
  const auto a = files.look_closely(), b = files.look_closely();
  ASSERT_TRUE(a && b && a->switches);
  EXPECT_TRUE(slept_through(*a, *b));
  ::kill(pid, SIGUSR1);
  ASSERT_EQ(::read(woken[0], &c, 1), 1);
  ASSERT_EQ(look_until(pid, Look::elsewhere, &last), Look::elsewhere);
  const auto after = files.look_closely();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->syscall, a->syscall) << "back in pause";
  EXPECT_FALSE(slept_through(*a, *after)) << "woken between the looks";
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(woken[0]);
  ::close(woken[1]);
}

ProcessStacks waiting_rank(std::vector<Frame> frames, std::string call, char state = 'S',
                           int syscall = SYS_futex) {
  ProcessStacks p;
  p.pid = 42;
  ThreadStack t;
  t.tid = 42;
  t.frames = std::move(frames);
  t.call = std::move(call);
  t.kernel = KernelThread{42, "python3", state, 0, "futex_do_wait", syscall};
  p.threads.push_back(std::move(t));
  return p;
}

TEST(StragglerLooks, WhereTheOthersWait) {
  const Frame c10d{"all_reduce",
                   "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2501};
  const Frame engine{"_engine_run_backward",
                     "/usr/lib/python3/dist-packages/torch/autograd/graph.py", 768};
  const Frame script{"main", "/home/u/train.py", 122};
  EXPECT_EQ(wait_site(waiting_rank({c10d, script}, "")), "all_reduce at train.py:122");
  EXPECT_EQ(wait_site(waiting_rank({engine, script}, "Variable._execution_engine.run_backward")),
            "Variable._execution_engine.run_backward at train.py:122");
  EXPECT_EQ(wait_site(waiting_rank({script}, "work.wait")), "work.wait at train.py:122");
  // Waiting on its own input is no wait for the others.
  const Frame data{"_get_data", "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py",
                   1466};
  EXPECT_EQ(wait_site(waiting_rank({data, script}, "")), "");
  // Every frame a library's: the innermost.
  EXPECT_EQ(wait_site(waiting_rank({c10d}, "")), "all_reduce at distributed_c10d.py:2501");
  // Not waiting, or no frames: nothing to say.
  EXPECT_EQ(wait_site(waiting_rank({script}, "time.sleep", 'S', SYS_clock_nanosleep)), "");
  EXPECT_EQ(wait_site(waiting_rank({script}, "", 'R', kNotInSyscall)), "");
  EXPECT_EQ(wait_site(waiting_rank({}, "")), "");
  ProcessStacks none;
  none.pid = 7;
  EXPECT_EQ(wait_site(none), "");
}

// What a sleeping main thread waits on (issue 68): torch's own frames
// decide (its DataLoader is the rank's input; torch.distributed, DDP and
// autograd's backward a collective), then the call, then the syscall; the
// kernel's word alone counts a futex as a collective.
TEST(StragglerLooks, WhatAWaitIsOn) {
  const std::string dist = "/usr/lib/python3/dist-packages/torch/";
  const Frame c10d{"broadcast", dist + "distributed/distributed_c10d.py", 2730};
  const Frame data{"_MultiProcessingDataLoaderIter._get_data", dist + "utils/data/dataloader.py",
                   1466};
  const Frame queue{"Queue.get", "/usr/lib/python3.11/queue.py", 180};
  const Frame wait{"Condition.wait", "/usr/lib/python3.11/threading.py", 324};
  const Frame script{"train", "/home/u/train.py", 22};
  const Frame backward{"_engine_run_backward", dist + "autograd/graph.py", 768};
  EXPECT_EQ(wait_kind({c10d, script}, "", SYS_futex), WaitKind::collective);
  EXPECT_EQ(wait_kind({backward, script}, "Variable._execution_engine.run_backward", SYS_futex),
            WaitKind::collective);
  EXPECT_EQ(wait_kind({script}, "work.wait", SYS_futex), WaitKind::collective);  // a Work's wait
  EXPECT_EQ(wait_kind({script}, "dist.all_reduce", SYS_futex), WaitKind::collective);
  // A DataLoader's queue waits in futex (its pin-memory thread) or poll: its input.
  EXPECT_EQ(wait_kind({wait, queue, data, script}, "waiter.acquire", SYS_futex), WaitKind::input);
  EXPECT_EQ(wait_kind({data, script}, "", SYS_poll), WaitKind::input);
  // threading's own waits have Python frames: a wait of its own, not a Work's.
  EXPECT_EQ(wait_kind({wait, queue, script}, "waiter.acquire", SYS_futex), WaitKind::other);
  EXPECT_EQ(wait_kind({script}, "lock.acquire", SYS_futex), WaitKind::other);
  EXPECT_EQ(wait_kind({script}, "f.read", SYS_read), WaitKind::file);
  EXPECT_EQ(wait_kind({script}, "time.sleep", SYS_select), WaitKind::sleep);  // 3.8-3.10's sleep
  EXPECT_EQ(wait_kind({script}, "time.sleep", SYS_clock_nanosleep), WaitKind::sleep);
  // The kernel's word alone.
  EXPECT_EQ(wait_kind({}, "", SYS_futex), WaitKind::collective);
  EXPECT_EQ(wait_kind({}, "", SYS_clock_nanosleep), WaitKind::sleep);
  EXPECT_EQ(wait_kind({}, "", SYS_pread64), WaitKind::file);
  EXPECT_EQ(wait_kind({}, "", SYS_poll), WaitKind::other);
  EXPECT_STREQ(wait_kind_name(WaitKind::input), "input");
}

// A look in futex counts as waiting only when the frames say a collective;
// the kernel's word is kept beside (futex), and a sleep elsewhere is own work.
TEST(StragglerLooks, FramesSayWhetherAFutexIsWaiting) {
  LookCounts c;
  c.add({'S', SYS_futex, 1, 1});                        // no frames: a collective
  c.add({'S', SYS_futex, 1, 1}, WaitKind::input);       // its DataLoader's queue
  c.add({'S', SYS_futex, 1, 1}, WaitKind::collective);  // a broadcast
  c.add({'S', SYS_poll, 1, 1}, WaitKind::input);        // the loader's pipe
  c.add({'D', SYS_read, 1, 1});                         // a slow disk
  c.add({'S', SYS_clock_nanosleep, 1, 1});              // time.sleep
  c.add({'S', SYS_epoll_wait, 1, 1});                   // a socket
  c.add({'R', kNotInSyscall, 1, 1}, WaitKind::input);   // running: computing, whatever was said
  EXPECT_EQ(c.looks, 8u);
  EXPECT_EQ(c.waiting, 2u);
  EXPECT_EQ(c.input, 2u);
  EXPECT_EQ(c.file, 1u);
  EXPECT_EQ(c.sleep, 1u);
  EXPECT_EQ(c.other, 1u);
  EXPECT_EQ(c.own(), 5u);
  EXPECT_EQ(c.running, 1u);
  EXPECT_EQ(c.futex, 3u);
}

}  // namespace
}  // namespace dp::stacks::straggler_samples_test
