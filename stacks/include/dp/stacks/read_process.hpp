// Reading one live process from outside, without stopping it: the entry the
// node agent calls for its step's tasks and a launcher's workers, and tools
// call for pids they are given.
//
// Who may be read (the policy, decided before anything of the target is
// touched): only a process of the reader's own effective uid. So the reader
// never uses a privilege the target's own user lacks: as the job's user (the
// node agent) it reads that user's processes, as the kernel would let that
// user's debugger; as root it reads only root's processes, never a user's
// memory. Then the target is pinned by a pidfd and checked to be what the
// caller expects (its start time, and every uid of /proc/PID/status); a
// process that exits or whose pid is reused while it is read is `gone`.
//
// The reads can block only where the kernel makes them wait for the target's
// memory map lock (/proc/PID/maps, process_vm_readv), which a process stuck
// in the kernel while changing its mappings (an unanswered page fault on a
// dead file system) may hold: callers that must answer in time read on a
// thread of their own and stop waiting at their deadline.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

struct Target {
  int pid = 0;
  unsigned long long start_ticks = 0;  // /proc/PID/stat field 22, as the caller learned it
  uid_t uid = 0;                       // whose the caller expects it to be
};

// The process `pid` is now, for a caller given bare pids (tools): its start
// time and real uid read now. nullopt when there is no such process.
std::optional<Target> target_now(int pid);

struct ReadLimits {
  WalkLimits walk;
  size_t max_kernel_threads = 1024;
  size_t max_maps_bytes = 4 << 20;  // a large PyTorch process's map is a few hundred KiB
};

ProcessStacks read_process(const Target& target, const ReadLimits& limits);

// process_vm_readv from one process: whole reads or false; the first
// failure's errno is kept (EPERM: not allowed; ESRCH: gone).
class ProcessMemory final : public RemoteMemory {
 public:
  explicit ProcessMemory(int pid) : pid_(pid) {}
  bool read(uint64_t address, std::span<std::byte> out) override;
  int first_errno() const { return first_errno_; }

 private:
  int pid_;
  int first_errno_ = 0;
};

}  // namespace dp::stacks
