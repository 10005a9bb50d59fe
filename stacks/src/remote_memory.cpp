#include "dp/stacks/remote_memory.hpp"

namespace dp::stacks {

BoundedMemory::BoundedMemory(RemoteMemory& memory, const WalkLimits& limits,
                             Clock::time_point deadline)
    : memory_(memory), limits_(limits), deadline_(deadline) {}

bool BoundedMemory::read(uint64_t address, std::span<std::byte> out) {
  if (stop_ != MemoryStop::none) return false;
  if (out.empty()) return true;
  if (out.size() - 1 > UINT64_MAX - address) return false;  // wraps: no such range
  if (reads_ >= limits_.max_reads || out.size() > limits_.max_bytes - bytes_) {
    stop_ = MemoryStop::budget;
    return false;
  }
  if (Clock::now() >= deadline_) {
    stop_ = MemoryStop::deadline;
    return false;
  }
  ++reads_;
  bytes_ += out.size();
  return memory_.read(address, out);
}

}  // namespace dp::stacks
