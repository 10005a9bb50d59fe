// The NCCL module's entry point: the one symbol libdp-nccl.so exports.
#include <exception>
#include <string>

#include "nccl_module.hpp"

namespace dp::detail {
namespace {

Communicator* make(const Context& ctx, std::chrono::milliseconds timeout, const NcclHost& host,
                   Error* error) noexcept {
  try {
    auto c = make_nccl_backend(ctx, timeout, host);
    if (c) return c->release();
    *error = c.error();
  } catch (const std::exception& e) {
    *error = make_error(Errc::internal, std::string("backend nccl: ") + e.what());
  } catch (...) {
    *error = make_error(Errc::internal, "backend nccl: unknown exception");
  }
  return nullptr;
}

const NcclModule kModule{DP_VERSION_STRING, &nccl_cuda_devices, &make};

}  // namespace
}  // namespace dp::detail

extern "C" const dp::detail::NcclModule* dp_nccl_module_v1() noexcept {
  return &dp::detail::kModule;
}
