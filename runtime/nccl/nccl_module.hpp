// The seam between libdp and its NCCL backend. The backend is a module of
// its own (libdp-nccl.so, in the CUDA package) so that libdp needs neither
// CUDA nor NCCL to load: libdp opens it only when the nccl backend is asked
// for or an automatic choice counts GPUs. Both sides come from one build, so
// C++ types cross the seam; the entry point is C, noexcept, and checks that
// the versions are equal.
//
// The module holds none of libdp's client, wire format or progress counters:
// libdp lends them (NcclHost). A second copy in the process would register
// our protobuf schema twice, which aborts, and count progress nobody reads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "backends.hpp"

namespace dp::detail {

// The module's folder, beside libdp (installed: <libdir>/slurm-dp/), and its file.
inline constexpr char kNcclModuleDir[] = "slurm-dp";
inline constexpr char kNcclModuleFile[] = "libdp-nccl.so";
inline constexpr char kNcclModuleEntry[] = "dp_nccl_module_v1";
// The package that ships the module, named in the error when it is absent.
inline constexpr char kNcclModulePackage[] = "slurm-dp-cuda";

using PublishOnce = std::function<void(const std::string& key, const std::vector<char>& value)>;

// The job's store, opened by libdp: the daemon's (through libdp's client) or
// DP_STORE_DIR's. Gloo-style: its calls throw on failure.
struct NcclStore {
  gloo::rendezvous::Store* store = nullptr;  // owned by `owner`
  PublishOnce publish_once;                  // a write-once key (node agents cache it)
  // Without a daemon (a store directory) these two are empty.
  std::function<void(std::function<void(const Error&)>)> on_abort;
  std::function<void()> goodbye;
  std::shared_ptr<void> owner;
};

// Start-up phases, into libdp's start-up log and progress counters.
class NcclPhases {
 public:
  virtual ~NcclPhases() = default;
  virtual void phase(const std::string& name) = 0;
};

struct NcclHost {
  Result<NcclStore> (*open_store)(const Context& ctx, std::chrono::milliseconds timeout);
  NcclPhases* phases;
  int ranks_per_root;  // DP_NCCL_RANKS_PER_ROOT, read by libdp (params.hpp)
};

struct NcclModule {
  const char* version;  // the build's version; libdp refuses a module of another
  int (*cuda_devices)() noexcept;
  // A started communicator, or null with *error filled.
  Communicator* (*make)(const Context& ctx, std::chrono::milliseconds timeout, const NcclHost& host,
                        Error* error) noexcept;
};

using NcclModuleEntry = const NcclModule* (*)() noexcept;

// libdp's side (nccl_loader.cpp): its store opener, for the module and tests.
Result<NcclStore> open_nccl_store(const Context& ctx, std::chrono::milliseconds timeout);

// Inside the module: the backend itself (nccl_communicator.cpp).
int nccl_cuda_devices() noexcept;
Result<std::unique_ptr<Communicator>> make_nccl_backend(const Context& ctx,
                                                        std::chrono::milliseconds timeout,
                                                        const NcclHost& host);

}  // namespace dp::detail
