// A node's ranks read at once, within one deadline: what the node agent is
// to answer `dp-top --stacks` and the hang verdict with (issue 45). Each
// target is read by read_process on one of a few threads, then its calls are
// named (name_calls) if time is left; the answer comes by the deadline
// whatever the targets and their files do.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "dp/stacks/call_site.hpp"
#include "dp/stacks/read_process.hpp"

namespace dp::stacks {

struct ManyLimits {
  ReadLimits each;                           // each walk's own deadline is cut to what is left
  std::chrono::milliseconds deadline{1500};  // for all of them together
  size_t threads = 8;
};

// One answer per target, in the targets' order. A target not read by the
// deadline is `over_time`: a read blocked where the kernel waits for the
// target's memory map lock (/proc/PID/maps, process_vm_readv) cannot be
// interrupted, so its thread is left to finish on its own and its answer is
// dropped. Never throws: without threads the targets are read on the
// caller's thread, each within what is left of the deadline.
std::vector<ProcessStacks> read_processes(const std::vector<Target>& targets,
                                          const ManyLimits& limits);

}  // namespace dp::stacks
