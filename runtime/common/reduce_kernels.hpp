// Element-wise reductions on raw buffers, for every DType: what a backend
// without native support for a type (Gloo and fp16/bf16) plugs in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dp/communicator.hpp"

namespace dp::detail {

float half_to_float(uint16_t h) noexcept;
uint16_t float_to_half(float f) noexcept;  // round to nearest even
float bf16_to_float(uint16_t b) noexcept;
uint16_t float_to_bf16(float f) noexcept;  // round to nearest even

// out[i] = a[i] + b[i]; out may alias a or b.
using SumFn = void (*)(void* out, const void* a, const void* b, size_t n);
SumFn sum_function(DType t) noexcept;

// buf[i] /= divisor (integers truncate toward zero).
void divide_in_place(void* buf, size_t n, DType t, int divisor) noexcept;

}  // namespace dp::detail
