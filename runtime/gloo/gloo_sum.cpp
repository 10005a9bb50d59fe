#include "gloo_sum.hpp"

#include <gloo/allreduce.h>
#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <vector>

#include "reduce_kernels.hpp"

namespace dp::detail {
namespace {

// Beside gloo's own slot prefixes (gloo/types.h: 0x01-0x08).
constexpr uint8_t kDoublingSlotPrefix = 0x31;

// Each step sums the same two operands on both ranks of a pair (a + b and
// b + a are the same number), so every rank ends with the same bits.
void doubling_sum(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag,
                  std::chrono::milliseconds timeout, void* buf, size_t count, DType type) {
  const size_t bytes = count * dtype_size(type);
  // The peer's buffer, kept per thread (a communicator's op worker, a host
  // leader's stage): no allocation, zeroing or page faults on each call.
  thread_local std::vector<unsigned char> theirs;
  if (theirs.size() < bytes) theirs.resize(bytes);
  auto mine = ctx->createUnboundBuffer(buf, bytes);
  auto in = ctx->createUnboundBuffer(theirs.data(), bytes);
  const gloo::Slot slot = gloo::Slot::build(kDoublingSlotPrefix, tag);
  const SumFn sum = sum_function(type);
  uint8_t step = 0;
  for (int mask = 1; mask < ctx->size; mask <<= 1, ++step) {
    const int peer = ctx->rank ^ mask;
    in->recv(peer, slot + step);
    mine->send(peer, slot + step);
    // false: the wait was aborted (gloo's own word for a broken op).
    if (!in->waitRecv(timeout) || !mine->waitSend(timeout))
      throw gloo::IoException("all_reduce: the exchange with rank " + std::to_string(peer) +
                              " was aborted");
    sum(buf, buf, theirs.data(), count);
  }
}

void ring_sum(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag,
              std::chrono::milliseconds timeout, void* buf, size_t count, DType type) {
  gloo::AllreduceOptions o(ctx);
  o.setTag(tag);
  o.setTimeout(timeout);
  // gloo only needs the element size to cut segments; the sum knows the type.
  switch (dtype_size(type)) {
    case 2: o.setOutput(static_cast<uint16_t*>(buf), count); break;
    case 4: o.setOutput(static_cast<uint32_t*>(buf), count); break;
    default: o.setOutput(static_cast<uint64_t*>(buf), count); break;
  }
  SumFn sum = sum_function(type);
  o.setReduceFunction(
      [sum](void* out, const void* a, const void* b, size_t n) { sum(out, a, b, n); });
  gloo::allreduce(o);
}

}  // namespace

bool sums_by_doubling(int size, size_t bytes) noexcept {
  return size > 1 && (size & (size - 1)) == 0 && bytes <= kDoublingMaxBytes;
}

void gloo_sum(const std::shared_ptr<gloo::Context>& ctx, uint32_t tag,
              std::chrono::milliseconds timeout, void* buf, size_t count, DType type) {
  if (sums_by_doubling(ctx->size, count * dtype_size(type)))
    doubling_sum(ctx, tag, timeout, buf, count, type);
  else ring_sum(ctx, tag, timeout, buf, count, type);
}

}  // namespace dp::detail
