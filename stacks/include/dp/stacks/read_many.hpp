// A node's ranks read at once, within one deadline: what the node agent is
// to answer `dp-top --stacks` and the hang verdict with (issue 45). Each
// target is read by read_process on one of a few threads, then its calls are
// named (name_calls) if time is left; the answer comes by the deadline
// whatever the targets and their files do.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "dp/stacks/call_site.hpp"
#include "dp/stacks/read_process.hpp"

namespace dp::stacks {

struct ManyLimits {
  ReadLimits each;                           // each walk's own deadline is cut to what is left
  std::chrono::milliseconds deadline{1500};  // for all of them together
  size_t threads = 8;
  // Source files read to name calls (name_calls), all targets of the round
  // together; none is started past the deadline.
  size_t source_bytes = 16 << 20;
  bool program_calls_only = false;  // SourceLimits::program_files_only
  // How one target is read; empty: read_process (tests give one that blocks).
  using Read = std::function<ProcessStacks(const Target&, const ReadLimits&)>;
  Read read;
};

// One answer per target, in the targets' order. A target not read by the
// deadline is `over_time`: a read blocked where the kernel waits for the
// target's memory map lock (/proc/PID/maps, process_vm_readv) cannot be
// interrupted, so its thread is left to finish on its own and its answer is
// dropped. Such a target is not read again while that read is still blocked
// (in any later round of this process): it is `over_time` at once, with no
// new thread, so a target that never answers holds one reader thread, not
// one per round. Never throws: without threads the targets are read on the
// caller's thread, each within what is left of the deadline.
std::vector<ProcessStacks> read_processes(const std::vector<Target>& targets,
                                          const ManyLimits& limits);

// Reader threads of this process still running (a blocked read's included).
int live_readers();

}  // namespace dp::stacks
