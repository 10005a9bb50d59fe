// The CUDA module's entry point: the one symbol libdp-trainer-cuda.so exports.
#include "cuda_module.hpp"

#include <exception>
#include <string>

#include "cuda_ops.hpp"
#include "dp/abi_barrier.hpp"

namespace dpt {
namespace {

int device_count() noexcept {
  try {
    return cuda_device_count();
  } catch (...) {
    return 0;
  }
}

Ops* make_ops(int device, Precision precision, dp::Error* error) noexcept {
  return dp::released_across_abi("CUDA ops", error,
                                 [&] { return make_cuda_ops(device, precision); });
}

const CudaModule kModule{DP_VERSION_STRING, &device_count, &make_ops};

}  // namespace
}  // namespace dpt

extern "C" const dpt::CudaModule* dpt_cuda_module_v1() noexcept { return &dpt::kModule; }
