#include "reduce_kernels.hpp"

#include <bit>
#include <cstring>

namespace dp::detail {

float half_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalise into a float.
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_half(float f) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to inf
  if (abs < 0x38800000u) {                        // subnormal or zero in half
    if (abs < 0x33000000u) return sign;           // below half of the smallest subnormal
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // half subnormal = m * 2^(e-126); 14..24
    uint32_t v = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (v & 1u))) ++v;
    return sign | static_cast<uint16_t>(v);
  }
  uint32_t v = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (v & 1u))) ++v;
  return sign | static_cast<uint16_t>(v);
}

float bf16_to_float(uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t float_to_bf16(float f) noexcept {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

template <class T>
void sum_native(void* out, const void* a, const void* b, size_t n) {
  // memcpy-free typed loops: the buffers come from new[]/malloc, so aligned.
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = x[i] + y[i];
}

template <float (*ToF)(uint16_t) noexcept, uint16_t (*FromF)(float) noexcept>
void sum_16(void* out, const void* a, const void* b, size_t n) {
  uint16_t* o = static_cast<uint16_t*>(out);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = FromF(ToF(x[i]) + ToF(y[i]));
}

template <class T>
void divide_native(void* buf, size_t n, T divisor) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = p[i] / divisor;
}

template <float (*ToF)(uint16_t) noexcept, uint16_t (*FromF)(float) noexcept>
void divide_16(void* buf, size_t n, float divisor) {
  uint16_t* p = static_cast<uint16_t*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = FromF(ToF(p[i]) / divisor);
}

}  // namespace

SumFn sum_function(DType t) noexcept {
  switch (t) {
    case DType::f32: return &sum_native<float>;
    case DType::f64: return &sum_native<double>;
    case DType::i32: return &sum_native<int32_t>;
    case DType::i64: return &sum_native<int64_t>;
    case DType::f16: return &sum_16<half_to_float, float_to_half>;
    case DType::bf16: return &sum_16<bf16_to_float, float_to_bf16>;
  }
  return nullptr;
}

void divide_in_place(void* buf, size_t n, DType t, int divisor) noexcept {
  if (divisor == 1) return;
  switch (t) {
    case DType::f32: return divide_native<float>(buf, n, static_cast<float>(divisor));
    case DType::f64: return divide_native<double>(buf, n, static_cast<double>(divisor));
    case DType::i32: return divide_native<int32_t>(buf, n, divisor);
    case DType::i64: return divide_native<int64_t>(buf, n, divisor);
    case DType::f16:
      return divide_16<half_to_float, float_to_half>(buf, n, static_cast<float>(divisor));
    case DType::bf16:
      return divide_16<bf16_to_float, float_to_bf16>(buf, n, static_cast<float>(divisor));
  }
}

}  // namespace dp::detail
