// Collective communication for data-parallel training: libdp's public C++ API
// (Gloo and NCCL behind one interface). Installed; dp-trainer is one user.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dp/context.hpp"
#include "dp/result.hpp"

namespace dp {

enum class DType { f32, f64, f16, bf16, i32, i64 };
enum class ReduceOp { sum, avg };
enum class Backend { automatic, gloo, nccl, single };  // single: world 1, no peers

size_t dtype_size(DType t) noexcept;
const char* backend_name(Backend b) noexcept;

// Handle of an asynchronous operation; wait() returns its outcome.
class Work {
 public:
  virtual ~Work() = default;
  virtual Result<void> wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Backend backend() const = 0;
  // The backend and how it moves data here, e.g. "gloo over tcp"; for logs.
  virtual std::string describe() const = 0;

  // buf: host memory for gloo/single, device memory for nccl.
  virtual Result<void> all_reduce(void* buf, size_t count, DType type, ReduceOp op) = 0;
  virtual Result<std::unique_ptr<Work>> all_reduce_async(void* buf, size_t count, DType type,
                                                         ReduceOp op) = 0;
  virtual Result<void> broadcast(void* buf, size_t count, DType type, int root) = 0;
  // recv holds size() * count elements, rank-major.
  virtual Result<void> all_gather(const void* send, void* recv, size_t count, DType type) = 0;
  virtual Result<void> barrier() = 0;

  // NCCL: every later collective first waits for the work queued so far on
  // this CUDA stream (a cudaStream_t; default: the legacy default stream),
  // so a buffer is reduced only after the kernels that wrote it. Wait on
  // the collective's Work before reading the buffer. Host backends ignore it.
  virtual Result<void> set_stream(void* cuda_stream) {
    (void)cuda_stream;
    return {};
  }
};

struct InitOptions {
  Backend backend = Backend::automatic;  // or DP_BACKEND=gloo|nccl
  int timeout_ms = 300'000;              // or DP_TIMEOUT_MS; collectives and rendezvous
};

// One call from the injected environment to a working communicator.
//
// Backend: WORLD_SIZE=1 -> single (no peers, no store; also for a forced nccl
// at world 1, which needs no store either); otherwise nccl when a
// CUDA device is visible, else gloo; InitOptions.backend or DP_BACKEND forces
// one (nccl without a usable device fails at once, Errc::unavailable).
// Rendezvous store: dp-rendezvousd from DP_RDV_ADDR/DP_RDV_SECRET (srun
// --dp-world=auto). torchrun-style variables alone (no daemon) need
// DP_STORE_DIR, a directory every rank can write (shared file system); without
// it init refuses with a message naming both variables, rather than guess.
// Failure: when the daemon reports a dead rank, every pending and later
// collective fails with Errc::aborted and the daemon's reason (which names the
// rank and host). Destroy the communicator before exiting: a rank that exits
// without it (std::exit, _exit) looks dead to the daemon and aborts the job.
// Threading: one thread issues collectives; all_reduce_async handles may be
// waited on from any thread, in any order.
Result<std::unique_ptr<Communicator>> init(const InitOptions& opts = {});
Result<std::unique_ptr<Communicator>> init(const Context& ctx, const InitOptions& opts = {});

}  // namespace dp
