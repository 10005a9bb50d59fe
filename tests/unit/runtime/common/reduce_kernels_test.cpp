// fp16/bf16 conversion and the reduction kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "reduce_kernels.hpp"

using namespace dp::detail;

TEST(Half, RoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00u) == 0x7c00u) continue;  // inf/nan
    float f = half_to_float(static_cast<uint16_t>(h));
    ASSERT_EQ(float_to_half(f), h) << "half 0x" << std::hex << h << " -> " << f;
  }
}

TEST(Half, KnownValuesAndRounding) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                      // rounds to inf
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(Bf16, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7f80u) == 0x7f80u) continue;
    ASSERT_EQ(float_to_bf16(bf16_to_float(static_cast<uint16_t>(b))), b);
  }
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(Kernels, SumAndAverage) {
  std::vector<float> a{1, 2, 3}, b{10, 20, 30};
  sum_function(dp::DType::f32)(a.data(), a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
  divide_in_place(a.data(), 3, dp::DType::f32, 11);
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3}));

  std::vector<int64_t> i{7, -7}, j{1, 1};
  sum_function(dp::DType::i64)(i.data(), i.data(), j.data(), 2);
  divide_in_place(i.data(), 2, dp::DType::i64, 4);
  EXPECT_EQ(i, (std::vector<int64_t>{2, -1}));

  std::vector<uint16_t> h{float_to_half(1.5f)}, g{float_to_half(2.25f)};
  sum_function(dp::DType::f16)(h.data(), h.data(), g.data(), 1);
  EXPECT_EQ(half_to_float(h[0]), 3.75f);
  std::vector<uint16_t> x{float_to_bf16(3.0f)}, y{float_to_bf16(5.0f)};
  sum_function(dp::DType::bf16)(x.data(), x.data(), y.data(), 1);
  divide_in_place(x.data(), 1, dp::DType::bf16, 2);
  EXPECT_EQ(bf16_to_float(x[0]), 4.0f);
}
