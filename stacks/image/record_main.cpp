// dp_stacks_record PID OUT TRUTH: records what one read of a live Python
// process touches (recorded_process.hpp) with the interpreter's own view of
// its frames (TRUTH, written by tests/unit/stacks/frames_target.py), so a
// unit test can read it again without that interpreter. Run as the
// process's user, while the target stands still; prints the frames read.
#include <fcntl.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "dp/bounded_read.hpp"
#include "dp/stacks/python_walk.hpp"
#include "dp/stacks/read_process.hpp"
#include "dp/unique_fd.hpp"
#include "recorded_process.hpp"

using namespace dp::stacks;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dp_stacks_record PID OUT TRUTH\n");
    return 2;
  }
  image::RecordedProcess r;
  r.pid = std::atoi(argv[1]);
  std::ifstream truth(argv[3]);
  std::stringstream text;
  text << truth.rdbuf();
  r.truth = text.str();
  const dp::UniqueFd proc(
      ::open(("/proc/" + std::to_string(r.pid)).c_str(), O_RDONLY | O_DIRECTORY));
  if (!proc || r.truth.empty()) {
    std::fprintf(stderr, "dp_stacks_record: no process %d, or no truth in %s\n", r.pid, argv[3]);
    return 1;
  }
  r.maps = dp::read_bounded_at(proc.get(), "maps", 4 << 20);
  const MappedFileOpener real_files = mapped_files(proc.get());
  auto found = find_interpreter(r.maps, [&](const Mapping& m) -> MappedFile {
    MappedFile f = real_files(m);
    if (f.read) f.read = image::recording_file(std::move(f.read), r.files[m.path]);
    return f;
  });
  if (auto* no = std::get_if<NoStacks>(&found)) {
    std::fprintf(stderr, "dp_stacks_record: %s: %s\n", no_python_name(no->why), no->detail.c_str());
    return 1;
  }
  PythonProcess python = std::get<PythonProcess>(found);
  python.pid = r.pid;
  ProcessMemory real(r.pid);
  image::RecordingMemory memory(real, r.memory);
  const ProcessStacks s = walk_python(memory, python, WalkLimits{});
  if (s.no_python) {
    std::fprintf(stderr, "dp_stacks_record: %s: %s\n", no_python_name(s.no_python->why),
                 s.no_python->detail.c_str());
    return 1;
  }
  for (auto it = r.files.begin(); it != r.files.end();) {
    it = it->second.empty() ? r.files.erase(it) : std::next(it);
  }
  if (auto saved = image::save_recording(r, argv[2]); !saved) {
    std::fprintf(stderr, "dp_stacks_record: %s\n", saved.error().message.c_str());
    return 1;
  }
  std::printf("Python %s, %zu threads, %zu memory pages, %zu file(s)\n", s.python.c_str(),
              s.threads.size(), r.memory.size(), r.files.size());
  for (const auto& t : s.threads) {
    std::printf("T %d (%zu frames%s)\n", t.tid, t.frames.size(), t.truncated ? ", cut" : "");
  }
  return 0;
}
