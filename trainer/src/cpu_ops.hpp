// CPU implementation of Ops: OpenBLAS for GEMM, plain fused loops elsewhere.
#pragma once

#include <memory>

#include "ops.hpp"

namespace dpt {

std::unique_ptr<Ops> make_cpu_ops();

}  // namespace dpt

namespace dpt {
// Threads OpenBLAS uses in this process (1 per rank when ranks share cores).
void set_cpu_threads(int n);
}  // namespace dpt
