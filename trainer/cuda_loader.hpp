// dp-trainer's side of its CUDA module (cuda/cuda_module.hpp): opened on
// first need from <bindir>/DP_TRAINER_MODULE_DIR (the installed layout, and
// the build tree's), once, never closed.
#pragma once

#include <string>

#include "cuda/cuda_module.hpp"
#include "dp/result.hpp"

namespace dpt {

// The module, or why there is none (the error names the package and the fix).
dp::Result<const CudaModule*> cuda_module();

}  // namespace dpt
