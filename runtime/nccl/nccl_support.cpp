#include "nccl_support.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

#include "dp/nccl_roots.hpp"

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

namespace {

std::vector<char> bytes_of(const ncclUniqueId* ids, size_t n) {
  const char* p = reinterpret_cast<const char*>(ids);
  return std::vector<char>(p, p + n * sizeof(ncclUniqueId));
}

// Gloo-style stores throw; one line naming the exchange and the rank.
Error exchange_failed(int rank, const std::exception& e) {
  std::string what = e.what();
  if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
  return make_error(Errc::connection,
                    "NCCL unique id exchange (rank " + std::to_string(rank) + "): " + what);
}

Error wrong_size(const std::string& key, size_t got, size_t want) {
  return make_error(Errc::protocol, "NCCL unique id under '" + key + "' has " +
                                        std::to_string(got) + " bytes, expected " +
                                        std::to_string(want) +
                                        "; are all ranks running the same slurm-dp?");
}

void publish(gloo::rendezvous::Store& store, const PublishOnce& publish_once,
             const std::string& key, const std::vector<char>& bytes) {
  // Through the daemon: write-once, so each node's agent fetches it once.
  if (publish_once) publish_once(key, bytes);
  else store.set(key, bytes);
}

}  // namespace

Result<std::vector<ncclUniqueId>> exchange_nccl_ids(gloo::rendezvous::Store& store,
                                                    const PublishOnce& publish_once, int rank,
                                                    int world, int roots, const std::string& key) {
  roots = std::max(roots, 1);
  std::vector<ncclUniqueId> ids(static_cast<size_t>(roots));
  try {
    if (const int mine = nccl_root_index(rank, world, roots); mine >= 0) {
      ncclUniqueId& id = ids[static_cast<size_t>(mine)];
      if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
        return nccl_error(r, "ncclGetUniqueId");
      // Root 0 is rank 0, whose own ID goes out only in the list.
      if (mine > 0)
        publish(store, publish_once, key + "/" + std::to_string(mine), bytes_of(&id, 1));
    }
    if (rank == 0) {
      for (int i = 1; i < roots; ++i) {
        const std::string k = key + "/" + std::to_string(i);
        const std::vector<char> got = store.get(k);
        if (got.size() != sizeof(ncclUniqueId))
          return wrong_size(k, got.size(), sizeof(ncclUniqueId));
        std::memcpy(&ids[static_cast<size_t>(i)], got.data(), got.size());
      }
      publish(store, publish_once, key + "/all", bytes_of(ids.data(), ids.size()));
      return ids;
    }
    const std::vector<char> all = store.get(key + "/all");
    if (all.size() != ids.size() * sizeof(ncclUniqueId))
      return wrong_size(key + "/all", all.size(), ids.size() * sizeof(ncclUniqueId));
    std::memcpy(ids.data(), all.data(), all.size());
    return ids;
  } catch (const std::exception& e) {
    return exchange_failed(rank, e);
  }
}

}  // namespace dp::detail
