#include "cuda_device.hpp"

#include <string>

namespace dp::detail {

Result<int> select_cuda_device(const std::vector<int>& tiles, int local_rank, int visible) {
  if (visible <= 0) {
    return make_error(Errc::unavailable,
                      "backend nccl: no usable CUDA device was found in this task (driver missing "
                      "or no GPU visible); run on a GPU node or use DP_BACKEND=gloo");
  }
  if (!tiles.empty()) {
    if (static_cast<int>(tiles.size()) == visible) return 0;
    if (tiles.front() < visible) return tiles.front();
    return make_error(Errc::invalid_argument,
                      "DP_TILES starts at device " + std::to_string(tiles.front()) + " but only " +
                          std::to_string(visible) +
                          " CUDA device(s) are visible; check the "
                          "site's device mask (CUDA_VISIBLE_DEVICES) against --dp-tiles");
  }
  if (local_rank < visible) return local_rank;
  return make_error(Errc::invalid_argument,
                    "LOCAL_RANK=" + std::to_string(local_rank) + " but only " +
                        std::to_string(visible) + " CUDA device(s) are visible; run at most " +
                        std::to_string(visible) + " tasks per node or request --dp-tiles");
}

}  // namespace dp::detail
