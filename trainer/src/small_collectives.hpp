// Small collectives on host vectors (throughput figures, evaluation totals,
// the resume check) through a scratch buffer of the ops, so they work with
// device-memory backends (NCCL) too.
#pragma once

#include <vector>

#include "device_buffer.hpp"
#include "dp/communicator.hpp"
#include "ops.hpp"

namespace dpt {

class SmallCollectives {
 public:
  SmallCollectives(dp::Communicator& comm, Ops& ops) : comm_(comm), ops_(ops) {}

  // Element-wise sum over the ranks, in place.
  dp::Result<void> all_reduce_sum(std::vector<float>& v);
  // Every rank's `mine` (the same length on each), in rank order.
  dp::Result<std::vector<float>> all_gather(const std::vector<float>& mine);

 private:
  // The scratch buffer, grown to at least n floats.
  dp::Result<float*> scratch(size_t n);

  dp::Communicator& comm_;
  Ops& ops_;
  DeviceBuffer buf_;
};

}  // namespace dpt
