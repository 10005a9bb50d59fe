// The NCCL module's entry point: the one symbol libdp-nccl.so exports.
#include <exception>
#include <string>

#include "dp/abi_barrier.hpp"
#include "nccl_module.hpp"

namespace dp::detail {
namespace {

Communicator* make(const Context& ctx, std::chrono::milliseconds timeout, const NcclHost& host,
                   Error* error) noexcept {
  return released_across_abi("backend nccl", error,
                             [&] { return make_nccl_backend(ctx, timeout, host); });
}

const NcclModule kModule{DP_VERSION_STRING, &nccl_cuda_devices, &make};

}  // namespace
}  // namespace dp::detail

extern "C" const dp::detail::NcclModule* dp_nccl_module_v1() noexcept {
  return &dp::detail::kModule;
}
