// CUDA implementation of Ops (kernels + cuBLAS). This header has no CUDA
// types so the host-only parts of the trainer can include it.
#pragma once

#include <memory>

#include "../src/ops.hpp"

namespace dpt {

// 0 when there is no driver or no device (any CUDA error counts as none).
int cuda_device_count();
// Drives `device` (from dp::Context::cuda_device, the communicator's choice
// too); GEMMs at the given precision.
dp::Result<std::unique_ptr<Ops>> make_cuda_ops(int device, Precision precision);

}  // namespace dpt
