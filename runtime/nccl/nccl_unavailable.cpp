// Built when libdp has no CUDA/NCCL support (DP_HAVE_CUDA off).
#include "backends.hpp"

namespace dp::detail {

int usable_cuda_devices() noexcept { return 0; }

Result<std::unique_ptr<Communicator>> make_nccl_communicator(const Context&,
                                                             std::chrono::milliseconds) {
  return make_error(Errc::unavailable,
                    "backend nccl: this libdp was built without CUDA/NCCL; use DP_BACKEND=gloo "
                    "or rebuild with -DDP_WITH_CUDA=ON");
}

}  // namespace dp::detail
