// A real Python process as the stack reader saw it, kept in a file so a
// test can read it again where its interpreter cannot run (3.8, 3.10 and
// 3.12 in CI): its /proc/PID/maps text, the pages of its memory and of its
// interpreter's files that one read touched, and the interpreter's own view
// of its frames at that moment (frames_target.py's truth). Recorded by
// dp_stacks_record (record_main.cpp) from a live process; replayed through
// the same find_interpreter and walk_python as a live read.
//
// The file: gzip over "dp-stacks-image 1\n", then "pid N\n", "maps N\n",
// "truth N\n" (N bytes follow each), "file PATH N\n" and "page ADDRESS N\n"
// (N bytes of that file or of memory follow), "end\n".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dp/result.hpp"
#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/runtime_address.hpp"

namespace dp::stacks::image {

inline constexpr uint64_t kPage = 4096;
using Pages = std::map<uint64_t, std::vector<std::byte>>;  // page-aligned start -> bytes

struct RecordedProcess {
  int pid = 0;
  std::string maps;
  std::string truth;                   // "T tid", "F name|file|line" innermost first
  std::map<std::string, Pages> files;  // by the path the maps name
  Pages memory;
};

Result<void> save_recording(const RecordedProcess& r, const std::string& path);
Result<RecordedProcess> load_recording(const std::string& path);

// Reads out of recorded pages: whole, or false where a page was not kept.
bool read_pages(const Pages& pages, uint64_t address, std::span<std::byte> out);

// The process's memory, as recorded.
class RecordedMemory final : public RemoteMemory {
 public:
  explicit RecordedMemory(const Pages& pages) : pages_(pages) {}
  bool read(uint64_t address, std::span<std::byte> out) override {
    return read_pages(pages_, address, out);
  }

 private:
  const Pages& pages_;
};

// Each mapping's file, as recorded (by its path).
MappedFileOpener recorded_files(const RecordedProcess& r);

// The frames the interpreter saw, by thread: tid -> "name|file|line" lines.
std::map<int, std::vector<std::string>> truth_by_thread(const std::string& truth);

// Recording: reads through `real`, keeping every page a read touches (the
// page is read whole the first time, and served from what was kept after,
// so one recording is one consistent view).
class RecordingMemory final : public RemoteMemory {
 public:
  RecordingMemory(RemoteMemory& real, Pages& pages) : real_(real), pages_(pages) {}
  bool read(uint64_t address, std::span<std::byte> out) override;

 private:
  RemoteMemory& real_;
  Pages& pages_;
};

// A file reader that keeps the pages it reads, into `pages`.
FileReader recording_file(FileReader real, Pages& pages);

}  // namespace dp::stacks::image
