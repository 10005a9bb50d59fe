// Which CUDA device a task drives, from its tiles (DP_TILES), LOCAL_RANK and
// the number of devices the process sees. Pure, so tested without a GPU.
#pragma once

#include <vector>

#include "dp/result.hpp"

namespace dp::detail {

// - visible == 0: Errc::unavailable, "no usable CUDA device".
// - tiles set and the mask already applied (visible == tiles.size()): the
//   devices are renumbered from 0, so device 0.
// - tiles set, all devices visible: the first tile, if it exists.
// - no tiles (torchrun-style): LOCAL_RANK, which must be < visible.
Result<int> select_cuda_device(const std::vector<int>& tiles, int local_rank, int visible);

}  // namespace dp::detail
