// The walk over synthetic processes (stacks/image): every layout from 3.8
// to 3.14 (the tables of 3.8-3.12, the debug offsets of 3.13 and 3.14),
// every bound, and memory that lies, loops or changes while it is read.
// Whatever the image, the walk ends within its bounds and says why.
#include "dp/stacks/python_walk.hpp"

#include <gtest/gtest.h>

#include <random>

#include "synthetic_python.hpp"

namespace dp::stacks {
namespace {

using image::build_synthetic_python;
using image::SyntheticFrame;
using image::SyntheticPython;
using image::SyntheticThread;

std::vector<SyntheticThread> two_threads() {
  return {
      {4242,
       {{"time_sleep_caller", "/home/u/hang.py", 18, 21}, {"main", "/home/u/hang.py", 28, 30}}},
      {4250,
       {{"Condition.wait", "/usr/lib/python3/threading.py", 320, 359},
        {"Event.wait", "/usr/lib/python3/threading.py", 640, 659},
        {"Condition.wait", "/usr/lib/python3/threading.py", 320, 355}}},
  };
}

std::vector<SyntheticThread> deep_thread(int tid, int depth) {
  SyntheticThread t{tid, {}};
  for (int i = 0; i < depth; ++i) t.frames.push_back({"recurse", "/r.py", 1, 2 + i % 3});
  return {t};
}

void put_owner(SyntheticPython& p, uint64_t frame, int owner) {
  p.image.put_u8(frame + p.layout.frame.owner, static_cast<uint8_t>(owner));
}

ProcessStacks walk(SyntheticPython& p, const WalkLimits& limits = {}) {
  return walk_python(p.image, p.process, limits);
}

std::string version_of(unsigned minor) {
  switch (minor) {
    case 11: return "3.11.2";
    case 12: return "3.12.3";
    case 13: return "3.13.5";
    case 14: return "3.14.8";
    default: return "3." + std::to_string(minor);  // 3.8-3.10 tell no patch
  }
}

class EveryLayout : public testing::TestWithParam<unsigned> {};

TEST_P(EveryLayout, EveryThreadsFramesInnermostFirst) {
  auto p = build_synthetic_python(GetParam(), two_threads());
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python) << s.no_python->detail;
  EXPECT_EQ(s.python, version_of(GetParam()));
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.threads[0].tid, 4242);  // the oldest, listed last by CPython, comes first
  EXPECT_EQ(s.threads[0].frames, (std::vector<Frame>{{"time_sleep_caller", "/home/u/hang.py", 21},
                                                     {"main", "/home/u/hang.py", 30}}));
  EXPECT_EQ(s.threads[1].tid, 4250);
  ASSERT_EQ(s.threads[1].frames.size(), 3u);
  EXPECT_EQ(s.threads[1].frames[0].line, 359);
  EXPECT_EQ(s.threads[1].frames[1].function, "Event.wait");
  EXPECT_EQ(s.threads[1].frames[2].line, 355);  // one code object, two lines
  EXPECT_FALSE(s.threads[0].truncated || s.threads[1].truncated);
  EXPECT_GT(s.bytes_read, 0u);
}

TEST_P(EveryLayout, AWideFileNameIsReadAsUtf8) {
  auto p = build_synthetic_python(GetParam(), {{7, {{"f", "/data/run.py", 1, 3, true}}}});
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  EXPECT_EQ(s.threads.at(0).frames.at(0).file, "/data/run.py");
}

// The innermost frame's line, and a span that says where its call is: the
// columns from 3.11, the whole line before.
TEST_P(EveryLayout, TheInnermostFrameHasASpan) {
  auto p = build_synthetic_python(GetParam(), two_threads());
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  ASSERT_TRUE(s.threads[0].innermost_at || GetParam() >= 11);
  if (GetParam() < 11) {
    EXPECT_EQ(*s.threads[0].innermost_at, (SourceSpan{21, 21, kNoColumn, kNoColumn}));
  }
}

TEST_P(EveryLayout, LineJumpsPastAByteAreRead) {
  auto p = build_synthetic_python(GetParam(),
                                  {{9, {{"far", "/f.py", 1, 900}, {"near", "/f.py", 500, 2}}}});
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  EXPECT_EQ(s.threads.at(0).frames.at(0).line, 900);
  EXPECT_EQ(s.threads[0].frames.at(1).line, 2);  // before its first line: the table goes back
}

TEST_P(EveryLayout, TheThreadsKernelIdsAreRead) {
  std::vector<SyntheticThread> threads = two_threads();
  threads.push_back({4261, {{"f", "/f.py", 1, 1}}});
  auto p = build_synthetic_python(GetParam(), threads);
  const ProcessStacks s = walk(p);
  ASSERT_EQ(s.threads.size(), 3u);
  EXPECT_EQ(s.threads[0].tid, 4242);
  EXPECT_EQ(s.threads[2].tid, 4261);
}

INSTANTIATE_TEST_SUITE_P(Python, EveryLayout, testing::Values(8u, 9u, 10u, 11u, 12u, 13u, 14u));

class LayoutsWithEntryFrames : public testing::TestWithParam<unsigned> {};

TEST_P(LayoutsWithEntryFrames, EntryFramesAreSkippedAndTheChainGoesOn) {
  auto p = build_synthetic_python(GetParam(), two_threads());
  // A nested evaluation's entry frame in the middle of the chain (Python called from C).
  put_owner(p, p.frames[1][1], p.layout.first_skipped_owner);
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  ASSERT_EQ(s.threads[1].frames.size(), 2u);
  EXPECT_EQ(s.threads[1].frames[1].line, 355);
  EXPECT_FALSE(s.threads[1].truncated);
}

INSTANTIATE_TEST_SUITE_P(Python, LayoutsWithEntryFrames, testing::Values(12u, 13u, 14u));

TEST_P(EveryLayout, NoInterpreterYetIsNoThreads) {
  auto p = build_synthetic_python(GetParam(), two_threads());
  const uint64_t head = p.interpreter;
  for (uint64_t at = p.runtime; at < head; at += 8) {
    uint64_t v = 0;
    ASSERT_TRUE(p.image.read(at, std::as_writable_bytes(std::span<uint64_t>(&v, 1))));
    if (v == head) p.image.put_u64(at, 0);
  }
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  EXPECT_TRUE(s.threads.empty());
}

TEST(Walk, AFrameChainThatLoopsIsCut) {
  auto p = build_synthetic_python(14, two_threads());
  p.image.put_u64(p.frames[1][2] + p.layout.frame.previous, p.frames[1][0]);
  const ProcessStacks s = walk(p);
  ASSERT_FALSE(s.no_python);
  EXPECT_TRUE(s.threads[1].truncated);
  EXPECT_EQ(s.threads[1].frames.size(), 3u);
  EXPECT_FALSE(s.threads[0].truncated);
}

TEST(Walk, AThreadListThatLoopsIsNamed) {
  auto p = build_synthetic_python(13, two_threads());
  p.image.put_u64(p.thread_states[0] + p.layout.thread.next, p.thread_states[1]);
  const ProcessStacks s = walk(p);
  ASSERT_TRUE(s.no_python);
  EXPECT_EQ(s.no_python->why, NoPython::inconsistent);
  EXPECT_TRUE(s.threads.empty());
}

// Point a field at a thread state: readable, but its "type" is not named
// what it should be: a frame's code object ("code"), or 3.8-3.10's frame
// object itself ("frame"). That thread's frames end there.
TEST(Walk, AnObjectThatIsNotWhatItShouldBeEndsThatThreadsFrames) {
  for (unsigned minor : {14u, 10u}) {
    auto p = build_synthetic_python(minor, two_threads());
    const uint64_t field = minor == 14 ? p.layout.frame.executable : p.layout.object.ob_type;
    p.image.put_u64(p.frames[1][1] + field, p.thread_states[0]);
    const ProcessStacks s = walk(p);
    ASSERT_FALSE(s.no_python);
    EXPECT_TRUE(s.threads[1].truncated) << minor;
    ASSERT_EQ(s.threads[1].frames.size(), 1u) << minor;
    EXPECT_EQ(s.threads[1].frames[0].function, "Condition.wait");
    EXPECT_EQ(s.threads[0].frames.size(), 2u);
  }
}

TEST(Walk, AnOwnerNoFrameHasIsGarbage) {
  auto p = build_synthetic_python(13, two_threads());
  put_owner(p, p.frames[0][1], 9);
  const ProcessStacks s = walk(p);
  EXPECT_TRUE(s.threads.at(0).truncated);
  EXPECT_EQ(s.threads[0].frames.size(), 1u);
}

TEST(Walk, AnInstructionOutsideItsCodeHasNoLine) {
  auto p = build_synthetic_python(13, two_threads());
  p.image.put_u64(p.frames[0][0] + p.layout.frame.instr_ptr, 3);
  const ProcessStacks s = walk(p);
  EXPECT_EQ(s.threads.at(0).frames.at(0).line, -1);
  EXPECT_EQ(s.threads[0].frames[1].line, 30);
}

TEST(Walk, TheFrameLimitCutsADeepStack) {
  auto p = build_synthetic_python(14, deep_thread(1, 300));
  WalkLimits limits;
  limits.max_frames = 50;
  const ProcessStacks s = walk(p, limits);
  ASSERT_FALSE(s.no_python);
  EXPECT_EQ(s.threads[0].frames.size(), 50u);
  EXPECT_TRUE(s.threads[0].truncated);
}

TEST(Walk, TheThreadLimitCutsTheList) {
  std::vector<SyntheticThread> threads;
  for (int i = 0; i < 10; ++i) threads.push_back({100 + i, {{"f", "/f.py", 1, 1}}});
  auto p = build_synthetic_python(13, threads);
  WalkLimits limits;
  limits.max_threads = 3;
  const ProcessStacks s = walk(p, limits);
  ASSERT_EQ(s.threads.size(), 3u);
  // CPython lists the newest first: a limit reads the newest, shown oldest first.
  EXPECT_EQ(s.threads[0].tid, 107);
}

TEST(Walk, ALongNameIsCutAtTheStringLimit) {
  auto p = build_synthetic_python(14, {{1, {{std::string(5000, 'n'), "/f.py", 1, 1}}}});
  WalkLimits limits;
  limits.max_string = 64;
  const ProcessStacks s = walk(p, limits);
  ASSERT_FALSE(s.no_python);
  EXPECT_EQ(s.threads.at(0).frames.at(0).function, std::string(64, 'n') + "...");
}

TEST(Walk, SpentBudgetsAndDeadlinesAreNamed) {
  auto p = build_synthetic_python(14, deep_thread(1, 100));
  WalkLimits bytes, reads, time;
  bytes.max_bytes = 2000;
  reads.max_reads = 20;
  time.time = std::chrono::milliseconds(0);
  EXPECT_EQ(walk(p, bytes).no_python->why, NoPython::over_budget);
  EXPECT_LE(walk(p, bytes).bytes_read, 2000u);
  EXPECT_EQ(walk(p, reads).no_python->why, NoPython::over_budget);
  EXPECT_LE(walk(p, reads).reads, 20u);
  EXPECT_EQ(walk(p, time).no_python->why, NoPython::over_time);
}

TEST(Walk, WhatIsNotPythonIsNamed) {
  auto p = build_synthetic_python(14, two_threads());
  PythonProcess elsewhere = p.process;
  elsewhere.runtime = p.image.base() + (1 << 30);
  EXPECT_EQ(walk_python(p.image, elsewhere, {}).no_python->why, NoPython::unreadable);
  p.image.put_u64(p.runtime, 0x6f6c6c6568);  // no cookie, and no version said
  EXPECT_EQ(walk(p).no_python->why, NoPython::unsupported_python);
  auto q = build_synthetic_python(13, two_threads());
  q.image.put_u64(q.runtime + 8, 0x030f00f0);
  EXPECT_EQ(walk(q).no_python->why, NoPython::unsupported_python);
}

// Versions no table knows, and builds whose objects are shaped otherwise,
// are named from what the file said, before any of their structs is read.
TEST(Walk, VersionsAndBuildsNotReadAreNamed) {
  auto p = build_synthetic_python(10, two_threads());
  for (unsigned minor : {0u, 7u, 6u}) {
    p.process.minor = minor;
    const ProcessStacks s = walk(p);
    ASSERT_TRUE(s.no_python);
    EXPECT_EQ(s.no_python->why, NoPython::unsupported_python) << minor;
    EXPECT_NE(s.no_python->detail.find("3.8 to 3.14"), std::string::npos) << s.no_python->detail;
  }
  p.process.minor = 10;
  p.process.debug_build = true;
  EXPECT_EQ(walk(p).no_python->why, NoPython::debug_build);
  EXPECT_LE(walk(p).reads, 1u);
  auto q = build_synthetic_python(11, two_threads());
  q.process.debug_build = true;
  EXPECT_EQ(walk(q).no_python->why, NoPython::debug_build);
  EXPECT_NE(walk(q).no_python->detail.find("3.11.2"), std::string::npos);
  // Py_Version of a version that must publish debug offsets, or of no Python 3.
  for (uint64_t version : {0x030d00f0ull, 0x020700f0ull}) {
    auto r = build_synthetic_python(12, two_threads());
    r.image.put_u64(r.process.py_version, version);
    EXPECT_EQ(walk(r).no_python->why, NoPython::inconsistent) << std::hex << version;
  }
}

// 3.8-3.10 keep a pthread_t: the tid is read where glibc keeps it, or where
// another libc's main thread struct holds the pid; never a wrong one.
TEST(Walk, APthreadsTidIsFoundWhereTheMainThreadsHoldsThePid) {
  auto p = build_synthetic_python(9, two_threads());
  // Another libc: both tids 64 bytes into the struct.
  for (size_t i = 0; i < p.pthreads.size(); ++i) {
    p.image.put_u64(p.pthreads[i] + image::kImagePthreadTid, 0);
    p.image.put_u64(p.pthreads[i] + 64, static_cast<uint64_t>(two_threads()[i].tid));
  }
  ProcessStacks s = walk(p);
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.threads[0].tid, 4242);
  EXPECT_EQ(s.threads[1].tid, 4250);
  // A pid in no struct (another pid namespace): tids unknown, frames still read.
  p.process.pid = 77;
  s = walk(p);
  EXPECT_EQ(s.threads[0].tid, 0);
  EXPECT_EQ(s.threads[1].tid, 0);
  EXPECT_EQ(s.threads[0].frames.size(), 2u);
}

// A 3.11 or 3.12 frame that has not run (its instruction before its code)
// is left out, as CPython's own views leave it; the chain goes on.
TEST(Walk, AFrameThatHasNotStartedIsLeftOut) {
  for (unsigned minor : {11u, 12u}) {
    auto p = build_synthetic_python(minor, two_threads());
    uint64_t code = 0;
    ASSERT_TRUE(p.image.read(p.frames[1][0] + p.layout.frame.executable,
                             std::as_writable_bytes(std::span<uint64_t>(&code, 1))));
    p.image.put_u64(p.frames[1][0] + p.layout.frame.instr_ptr,
                    code + p.layout.code.code_adaptive - 2);
    const ProcessStacks s = walk(p);
    ASSERT_EQ(s.threads[1].frames.size(), 2u) << minor;
    EXPECT_EQ(s.threads[1].frames[0].function, "Event.wait");
    EXPECT_FALSE(s.threads[1].truncated);
  }
}

// Memory that changes under the walk: after every read one byte of the
// image flips. Whatever it reads, the walk stays within its bounds.
class ChangingMemory final : public RemoteMemory {
 public:
  ChangingMemory(image::MemoryImage& image, uint32_t seed) : image_(image), rng_(seed) {}
  bool read(uint64_t address, std::span<std::byte> out) override {
    const bool ok = image_.read(address, out);
    const uint64_t at = image_.base() + rng_() % image_.bytes().size();
    const auto b = static_cast<std::byte>(rng_());
    image_.put(at, std::span<const std::byte>(&b, 1));
    return ok;
  }

 private:
  image::MemoryImage& image_;
  std::mt19937 rng_;
};

TEST(Walk, MemoryThatChangesWhileReadStaysWithinBounds) {
  WalkLimits limits;
  limits.max_frames = 40;
  limits.max_threads = 8;
  limits.max_string = 100;
  limits.max_bytes = 64 * 1024;
  for (uint32_t seed = 0; seed < 700; ++seed) {
    auto p = build_synthetic_python(8 + seed % 7, two_threads());
    ChangingMemory memory(p.image, seed);
    const ProcessStacks s = walk_python(memory, p.process, limits);
    EXPECT_LE(s.bytes_read, limits.max_bytes);
    EXPECT_LE(s.threads.size(), limits.max_threads);
    for (const auto& t : s.threads) {
      EXPECT_LE(t.frames.size(), limits.max_frames);
      for (const auto& f : t.frames) EXPECT_LE(f.function.size(), limits.max_string + 3);
    }
    EXPECT_TRUE(s.no_python || !s.python.empty());
  }
}

}  // namespace
}  // namespace dp::stacks
