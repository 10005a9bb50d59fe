// The seam between dp-trainer and its CUDA half. The CUDA ops are a module
// of their own (libdp-trainer-cuda.so, in the CUDA package) so that
// dp-trainer runs where there is no CUDA runtime or cuBLAS: it opens the
// module only to count GPUs or to train on one. One build makes both sides;
// the entry point is C, noexcept, and the versions must be equal.
#pragma once

#include <memory>

#include "../src/ops.hpp"

namespace dpt {

inline constexpr char kCudaModuleFile[] = "libdp-trainer-cuda.so";
inline constexpr char kCudaModuleEntry[] = "dpt_cuda_module_v1";
inline constexpr char kCudaModulePackage[] = "slurm-dp-cuda";

struct CudaModule {
  const char* version;  // the build's version; dp-trainer refuses a module of another
  int (*device_count)() noexcept;
  // The ops, or null with *error filled.
  Ops* (*make_ops)(int device, Precision precision, dp::Error* error) noexcept;
};

using CudaModuleEntry = const CudaModule* (*)() noexcept;

}  // namespace dpt
