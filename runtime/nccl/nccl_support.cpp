#include "nccl_support.hpp"

#include <cstring>
#include <exception>
#include <vector>

namespace dp::detail {

Error nccl_error(ncclResult_t r, const std::string& what) {
  std::string msg = what + ": " + ncclGetErrorString(r);
  switch (r) {
    case ncclSuccess:
      return make_error(Errc::internal, msg + " (reported as an error; this is a bug)");
    case ncclUnhandledCudaError:
      return make_error(
          Errc::unavailable,
          msg + "; no usable CUDA device/driver here: run on a GPU node or use DP_BACKEND=gloo");
    case ncclSystemError:
      return make_error(Errc::connection,
                        msg + "; check the network between the nodes (NCCL_SOCKET_IFNAME)");
    case ncclRemoteError:
      return make_error(Errc::connection,
                        msg + "; a peer rank failed or disconnected, see its log");
    case ncclInvalidArgument:
    case ncclInvalidUsage: return make_error(Errc::invalid_argument, msg);
    case ncclInProgress:
      return make_error(Errc::timeout, msg + " (still in progress at the deadline)");
    default: return make_error(Errc::internal, msg);
  }
}

Result<ncclUniqueId> exchange_nccl_id(gloo::rendezvous::Store& store,
                                      const PublishOnce& publish_once, int rank,
                                      const std::string& key) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  try {
    if (rank == 0) {
      ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) return nccl_error(r, "ncclGetUniqueId");
      std::vector<char> bytes(id.internal, id.internal + sizeof(id.internal));
      // Through the daemon: write-once, so each node's agent fetches it once.
      if (publish_once) {
        publish_once(key, bytes);
      } else {
        store.set(key, bytes);
      }
      return id;
    }
    std::vector<char> got = store.get(key);
    if (got.size() != sizeof(id.internal)) {
      return make_error(Errc::protocol, "NCCL unique id under '" + key + "' has " +
                                            std::to_string(got.size()) + " bytes, expected " +
                                            std::to_string(sizeof(id.internal)) +
                                            "; are all ranks running the same slurm-dp?");
    }
    std::memcpy(id.internal, got.data(), got.size());
    return id;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    return make_error(Errc::connection,
                      "NCCL unique id exchange (rank " + std::to_string(rank) + "): " + what);
  }
}

}  // namespace dp::detail
