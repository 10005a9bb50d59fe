// The one way the walk reads another process: a small interface that the real
// reader (process_vm_readv), a recorded image and a synthetic one implement,
// so the walk itself is pure and tested from memory images. Every read it
// makes goes through BoundedMemory, which counts bytes and reads and watches
// a deadline: a walk over garbage ends, and says why.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dp::stacks {

class RemoteMemory {
 public:
  virtual ~RemoteMemory() = default;
  // Copies out.size() bytes from `address`: all of them, or false.
  virtual bool read(uint64_t address, std::span<std::byte> out) = 0;
  // What was read may have changed since (a list that changed while read
  // is read again): a reader that keeps what it read drops it.
  virtual void forget() {}
};

// The bounds of one process's walk. The defaults read a 64-rank step's ranks
// in well under the 2 s the merged view allows (a warm reader takes about
// 0.5 ms per process: tests/unit/stacks/live_roots.sh).
struct WalkLimits {
  size_t max_interpreters = 8;
  size_t max_threads = 256;
  size_t max_frames = 256;             // per thread; deeper stacks are cut, marked truncated
  size_t max_string = 1024;            // bytes of a name or file name (UTF-8), then "..."
  size_t max_line_table = 64 * 1024;   // bytes of one code object's co_linetable
  size_t max_bytes = 8 * 1024 * 1024;  // of the process's memory, all reads together
  size_t max_reads = 100'000;
  std::chrono::milliseconds time{250};
};

enum class MemoryStop { none, budget, deadline };

class BoundedMemory {
 public:
  using Clock = std::chrono::steady_clock;
  BoundedMemory(RemoteMemory& memory, const WalkLimits& limits, Clock::time_point deadline);
  // False when the read failed or a bound stopped it (stop() says which
  // bound). After a bound stops one read, every later read fails too.
  bool read(uint64_t address, std::span<std::byte> out);
  void forget() { memory_.forget(); }
  MemoryStop stop() const { return stop_; }
  bool bound_reached() const { return stop_ != MemoryStop::none; }
  uint64_t bytes() const { return bytes_; }
  uint64_t reads() const { return reads_; }

 private:
  RemoteMemory& memory_;
  const WalkLimits& limits_;
  Clock::time_point deadline_;
  MemoryStop stop_ = MemoryStop::none;
  uint64_t bytes_ = 0, reads_ = 0;
};

}  // namespace dp::stacks
