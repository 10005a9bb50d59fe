#include "small_collectives.hpp"

#include <algorithm>
#include <string>

namespace dpt {

dp::Result<float*> SmallCollectives::scratch(size_t n) {
  if (buf_.size() < n || !buf_.valid()) {
    buf_ = DeviceBuffer(ops_, std::max<size_t>(n, 64));
    if (!buf_.valid())
      return dp::make_error(dp::Errc::limit, std::string("out of ") + ops_.name() + " memory for " +
                                                 std::to_string(n) +
                                                 " floats of collective scratch");
  }
  return buf_.data();
}

dp::Result<void> SmallCollectives::all_reduce_sum(std::vector<float>& v) {
  auto buf = scratch(v.size());
  DP_TRY(buf);
  ops_.upload(*buf, v.data(), v.size());
  if (comm_.size() > 1) DP_TRY(comm_.all_reduce(*buf, v.size(), dp::DType::f32, dp::ReduceOp::sum));
  ops_.download(v.data(), *buf, v.size());
  return ops_.status();
}

dp::Result<std::vector<float>> SmallCollectives::all_gather(const std::vector<float>& mine) {
  const size_t n = mine.size(), w = static_cast<size_t>(comm_.size());
  // [this rank's values | every rank's values]: the two never overlap.
  auto buf = scratch(n + n * w);
  DP_TRY(buf);
  float* in = *buf;
  float* out = in + n;
  std::vector<float> all(n * w);
  ops_.upload(in, mine.data(), n);
  if (w > 1) DP_TRY(comm_.all_gather(in, out, n, dp::DType::f32));
  else out = in;
  ops_.download(all.data(), out, n * w);
  DP_TRY(ops_.status());
  return all;
}

}  // namespace dpt
