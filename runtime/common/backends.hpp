// Factories of the backends, and the rule that picks one. Internal to libdp.
#pragma once

#include <chrono>
#include <memory>

#include "dp/communicator.hpp"

namespace dp::detail {

struct ResolvedOptions {
  Backend backend = Backend::single;
  std::chrono::milliseconds timeout{300'000};
  // Gloo: all_reduce through shared memory among the ranks of each host.
  bool shared_memory = true;
};

// Number of CUDA devices this process can use; 0 without the NCCL module
// (package slurm-dp-cuda), a driver, or a device (cudaGetDeviceCount fails
// then, see NOTES). The module and make_nccl_communicator: nccl_loader.cpp.
int usable_cuda_devices() noexcept;

// Options + DP_BACKEND/DP_TIMEOUT_MS + world size + visible devices -> the
// backend to build. `cuda_devices` is a parameter so the rule is testable.
Result<ResolvedOptions> resolve_options(const Context& ctx, const InitOptions& opts,
                                        int cuda_devices);

// A blocking collective is its asynchronous form, waited for.
inline Result<void> wait_now(Result<std::unique_ptr<Work>> w) {
  if (!w) return w.error();
  return (*w)->wait();
}

Result<std::unique_ptr<Communicator>> make_gloo_communicator(const Context& ctx,
                                                             const ResolvedOptions& opts);
Result<std::unique_ptr<Communicator>> make_nccl_communicator(const Context& ctx,
                                                             std::chrono::milliseconds timeout);

}  // namespace dp::detail
