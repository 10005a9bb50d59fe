// gloo's sum all-reduce in place, any DType, over TCP. Buffers up to
// kDoublingMaxBytes on a power-of-two world go by recursive doubling: log2(n)
// exchanges of the whole buffer, where gloo's ring takes 2(n-1) exchanges of
// its pieces, one round trip each (at world 2 both move the same bytes).
// Measured here (bench/allreduce): 2.2-2.4x torch's gloo at 4-256 KiB where
// the ring was at parity, and at 1 MiB the ring's steps met the scheduler's
// tick on ranks pinned to a CPU (3 ms instead of 0.4). Larger buffers and
// other worlds take gloo's ring. Throws as gloo does.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "dp/communicator.hpp"

namespace dp::detail {

inline constexpr size_t kDoublingMaxBytes = 1 << 20;

// Whether a sum of `bytes` on a world of `size` goes by recursive doubling.
bool sums_by_doubling(int size, size_t bytes) noexcept;

void gloo_sum(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag,
              std::chrono::milliseconds timeout, void* buf, size_t count, DType type);

}  // namespace dp::detail
