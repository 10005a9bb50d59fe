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
#include <unordered_map>
#include <vector>

#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/runtime_address.hpp"
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

// The files a process maps, from its /proc/PID directory (kept open by the
// caller): the very file of each mapping, found where the reader sees it or
// through the process's own root (a container), checked by device and inode.
MappedFileOpener mapped_files(int proc_dir);

// process_vm_readv from one process: whole reads or false; the first
// failure's errno is kept (EPERM: not allowed; ESRCH: gone). Whole pages are
// read and kept (at most kPages of them, until forget()): a walk reads many
// small structs close to each other (a thread's frames share its stack
// chunk), and each system call costs far more than its bytes.
class ProcessMemory final : public RemoteMemory {
 public:
  static constexpr uint64_t kPage = 4096;
  static constexpr size_t kPages = 512;
  explicit ProcessMemory(int pid) : pid_(pid) {}
  bool read(uint64_t address, std::span<std::byte> out) override;
  void forget() override { pages_.clear(); }
  int first_errno() const { return first_errno_; }

 private:
  bool read_now(uint64_t address, std::span<std::byte> out);
  const std::byte* page(uint64_t start);

  int pid_;
  int first_errno_ = 0;
  std::unordered_map<uint64_t, std::vector<std::byte>> pages_;
};

}  // namespace dp::stacks
