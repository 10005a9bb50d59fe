// Real processes of every Python from 3.8 to 3.14, each recorded where its
// interpreter runs (tests/fixtures/stacks/images: live_roots.sh with
// DP_STACKS_RECORD, by dp_stacks_record) and read again here, where most of
// them cannot run: the interpreter found from its files as a live read finds
// it, every thread's frames equal to what the interpreter itself said they
// were (frames_target.py's truth), the deep recursion cut at the bound.
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "dp/stacks/python_walk.hpp"
#include "recorded_process.hpp"

namespace dp::stacks {
namespace {

struct Recording {
  const char* file;
  const char* version;  // what the reader says of it
  const char* where;    // where it was recorded
};

void PrintTo(const Recording& r, std::ostream* os) { *os << r.file; }

class RecordedImage : public testing::TestWithParam<Recording> {};

TEST_P(RecordedImage, FramesAreTheInterpretersOwn) {
  auto r = image::load_recording(std::string(DP_STACKS_FIXTURES) + "/images/" + GetParam().file);
  ASSERT_TRUE(r) << r.error().message;
  auto found = find_interpreter(r->maps, image::recorded_files(*r));
  ASSERT_TRUE(std::holds_alternative<PythonProcess>(found)) << std::get<NoStacks>(found).detail;
  PythonProcess python = std::get<PythonProcess>(found);
  python.pid = r->pid;
  image::RecordedMemory memory(r->memory);
  const WalkLimits limits;
  const ProcessStacks s = walk_python(memory, python, limits);
  ASSERT_FALSE(s.no_python) << s.no_python->detail;
  EXPECT_EQ(s.python, GetParam().version);
  const auto truth = image::truth_by_thread(r->truth);
  ASSERT_EQ(truth.size(), 3u);
  ASSERT_EQ(s.threads.size(), 3u);
  EXPECT_EQ(s.threads[0].tid, r->pid);  // the main thread first
  int cut = 0;
  for (const auto& t : s.threads) {
    auto it = truth.find(t.tid);
    ASSERT_NE(it, truth.end()) << "thread " << t.tid << " is not the interpreter's";
    std::vector<std::string> ours;
    for (const auto& f : t.frames)
      ours.push_back(f.function + "|" + f.file + "|" + std::to_string(f.line));
    std::vector<std::string> theirs = it->second;
    if (t.truncated) {  // the deep recursion: cut at the frame limit
      ++cut;
      ASSERT_EQ(ours.size(), limits.max_frames);
      theirs.resize(limits.max_frames);
    }
    EXPECT_EQ(ours, theirs) << "thread " << t.tid;
  }
  EXPECT_EQ(cut, 1);
  ASSERT_TRUE(s.threads[0].innermost_at);
  EXPECT_EQ(s.threads[0].innermost_at->line, s.threads[0].frames.at(0).line);
}

INSTANTIATE_TEST_SUITE_P(
    Python, RecordedImage,
    testing::Values(Recording{"python-3.8.img", "3.8", "Ubuntu 20.04's python3.8 3.8.2"},
                    Recording{"python-3.9.img", "3.9", "Debian 11's python3.9 3.9.2"},
                    Recording{"python-3.10.img", "3.10", "Ubuntu 22.04's python3.10 3.10.4"},
                    Recording{"python-3.11.img", "3.11.2", "Debian 12's python3.11"},
                    Recording{"python-3.12.img", "3.12.3", "Ubuntu 24.04's python3.12"},
                    Recording{"python-3.13.img", "3.13.5", "Debian 13's python3.13"},
                    Recording{"python-3.14.img", "3.14.8", "Debian testing's python3.14"}),
    [](const testing::TestParamInfo<Recording>& i) {
      std::string name = i.param.file;
      name = name.substr(7, name.size() - 11);  // python-3.8.img: 3.8
      for (char& c : name) c = c == '.' ? '_' : c;
      return "Python" + name;
    });

}  // namespace
}  // namespace dp::stacks
