// Backend::nccl: collectives on device buffers. The communicator is created
// non-blocking (ncclConfig_t.blocking = 0) so that start-up, every wait and
// the daemon's abort can all end in ncclCommAbort instead of a hang.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "arg_checks.hpp"
#include "backends.hpp"
#include "gloo_store.hpp"
#include "nccl_device.hpp"
#include "nccl_support.hpp"
#include "startup_log.hpp"

namespace dp::detail {

int usable_cuda_devices() noexcept {
  int n = 0;  // cudaGetDeviceCount leaves it unwritten on error (no driver: 35)
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
  }
  return ncclFloat32;
}

Error cuda_error(cudaError_t e, const std::string& what) {
  return make_error(Errc::unavailable, what + ": " + cudaGetErrorString(e));
}

// The communicator handle, shared with handles and the abort callback.
class NcclShared {
 public:
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::chrono::milliseconds timeout{0};

  // Serialises enqueues against an abort from the daemon's thread.
  std::mutex m;

  void abort(const Error& why) {
    std::lock_guard<std::mutex> lock(m);
    if (!reason_) reason_ = why;
    if (comm != nullptr && !aborted_) {
      (void)ncclCommAbort(comm);
      aborted_ = true;
    }
  }
  std::optional<Error> failure() {
    std::lock_guard<std::mutex> lock(m);
    return reason_;
  }
  bool aborted_locked() const { return aborted_; }

  // Waits until a non-blocking NCCL call has left ncclInProgress.
  Result<void> settle(ncclResult_t r, const std::string& what, Clock::time_point deadline) {
    while (r == ncclInProgress) {
      if (auto f = failure()) return make_error(Errc::aborted, what + ": " + f->message);
      if (Clock::now() > deadline) {
        abort(make_error(Errc::timeout, what + " timed out"));
        return make_error(Errc::timeout, what + " did not finish within " +
                                             std::to_string(timeout.count()) + " ms (DP_TIMEOUT_MS)");
      }
      std::this_thread::yield();
      if (ncclCommGetAsyncError(comm, &r) != ncclSuccess) break;
    }
    if (r != ncclSuccess) return nccl_error(r, what);
    return {};
  }

 private:
  std::optional<Error> reason_;
  bool aborted_ = false;
};

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclShared> s, cudaEvent_t ev, std::string what)
      : s_(std::move(s)), ev_(ev), what_(std::move(what)) {}
  ~NcclWork() override { cudaEventDestroy(ev_); }

  Result<void> wait() override {
    const auto deadline = Clock::now() + s_->timeout;
    while (true) {
      cudaError_t q = cudaEventQuery(ev_);
      if (q == cudaSuccess) return {};
      if (q != cudaErrorNotReady) return cuda_error(q, what_);
      if (auto f = s_->failure()) return make_error(Errc::aborted, what_ + " aborted: " + f->message);
      ncclResult_t async = ncclSuccess;
      (void)ncclCommGetAsyncError(s_->comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        Error e = nccl_error(async, what_);
        s_->abort(e);
        return e;
      }
      if (Clock::now() > deadline) {
        Error e = make_error(Errc::timeout, what_ + " did not finish within " +
                                                std::to_string(s_->timeout.count()) +
                                                " ms (DP_TIMEOUT_MS); communicator aborted");
        s_->abort(e);
        return e;
      }
      std::this_thread::yield();
    }
  }

 private:
  std::shared_ptr<NcclShared> s_;
  cudaEvent_t ev_;
  std::string what_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  ~NcclCommunicator() override {
    if (store_.client) (void)store_.client->goodbye();
    store_.client.reset();  // no abort callback after this point
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->comm != nullptr && !s_->aborted_locked()) {
      cudaStreamSynchronize(s_->stream);
      ncclCommDestroy(s_->comm);
    }
    if (s_->stream != nullptr) cudaStreamDestroy(s_->stream);
    if (scratch_ != nullptr) cudaFree(scratch_);
  }

  Result<void> start(const Context& ctx, std::chrono::milliseconds timeout, StartupLog& log) {
    s_->timeout = timeout;
    auto device = select_cuda_device(ctx.tiles, ctx.local_rank, usable_cuda_devices());
    if (!device) return device.error();
    if (auto e = cudaSetDevice(*device); e != cudaSuccess) return cuda_error(e, "cudaSetDevice");
    if (auto e = cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking); e != cudaSuccess) {
      return cuda_error(e, "cudaStreamCreate");
    }
    log.phase("device " + std::to_string(*device));
    auto js = open_job_store(ctx, timeout);
    if (!js) return js.error();
    store_ = std::move(*js);
    log.phase("connect to store");
    if (store_.client) {
      std::shared_ptr<NcclShared> s = s_;
      store_.client->on_abort([s](const Error& e) { s->abort(make_error(Errc::aborted, "job aborted: " + e.message)); });
    }
    static std::atomic<int> generation{0};
    auto id = exchange_nccl_id(*store_.store, rank_, "dp/nccl/" + std::to_string(generation++) + "/id");
    if (!id) return id.error();
    log.phase("unique id exchange");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(s_->m);
      r = ncclCommInitRankConfig(&s_->comm, size_, *id, rank_, &config);
    }
    if (r != ncclSuccess && r != ncclInProgress) return nccl_error(r, "ncclCommInitRank");
    DP_TRY(s_->settle(r, "ncclCommInitRank", Clock::now() + timeout));
    log.phase("ncclCommInitRank");
    return {};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::nccl; }
  std::string describe() const override { return "nccl"; }

  Result<void> all_reduce(void* buf, size_t count, DType type, ReduceOp op) override {
    return wait_now(all_reduce_async(buf, count, type, op));
  }

  Result<std::unique_ptr<Work>> all_reduce_async(void* buf, size_t count, DType type,
                                                 ReduceOp op) override {
    DP_TRY(check_buffer("all_reduce", buf, count));
    const ncclRedOp_t nop = op == ReduceOp::avg ? ncclAvg : ncclSum;
    return enqueue("all_reduce", [&](ncclComm_t c, cudaStream_t s) {
      return ncclAllReduce(buf, buf, count, nccl_type(type), nop, c, s);
    });
  }

  Result<void> broadcast(void* buf, size_t count, DType type, int root) override {
    DP_TRY(check_buffer("broadcast", buf, count));
    DP_TRY(check_root("broadcast", root, size_));
    return wait_now(enqueue("broadcast", [&](ncclComm_t c, cudaStream_t s) {
      return ncclBroadcast(buf, buf, count, nccl_type(type), root, c, s);
    }));
  }

  Result<void> all_gather(const void* send, void* recv, size_t count, DType type) override {
    DP_TRY(check_buffer("all_gather", send, count));
    DP_TRY(check_buffer("all_gather", recv, count));
    return wait_now(enqueue("all_gather", [&](ncclComm_t c, cudaStream_t s) {
      return ncclAllGather(send, recv, count, nccl_type(type), c, s);
    }));
  }

  Result<void> barrier() override {
    if (scratch_ == nullptr) {
      if (auto e = cudaMalloc(&scratch_, sizeof(int)); e != cudaSuccess) return cuda_error(e, "barrier: cudaMalloc");
    }
    return all_reduce(scratch_, 1, DType::i32, ReduceOp::sum);
  }

 private:
  template <class F>
  Result<std::unique_ptr<Work>> enqueue(const char* what, F&& call) {
    const std::string name = std::string(what) + " (nccl, rank " + std::to_string(rank_) + " of " +
                             std::to_string(size_) + ")";
    cudaEvent_t ev;
    if (auto e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); e != cudaSuccess) {
      return cuda_error(e, name);
    }
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(s_->m);
      if (s_->aborted_locked()) {
        cudaEventDestroy(ev);
        return make_error(Errc::aborted, name + ": the communicator was aborted");
      }
      r = call(s_->comm, s_->stream);
    }
    if (auto settled = s_->settle(r, name, Clock::now() + s_->timeout); !settled) {
      cudaEventDestroy(ev);
      return settled.error();
    }
    if (auto e = cudaEventRecord(ev, s_->stream); e != cudaSuccess) {
      cudaEventDestroy(ev);
      return cuda_error(e, name);
    }
    return std::unique_ptr<Work>(new NcclWork(s_, ev, name));
  }

  int rank_;
  int size_;
  void* scratch_ = nullptr;
  std::shared_ptr<NcclShared> s_ = std::make_shared<NcclShared>();
  JobStore store_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_nccl_communicator(const Context& ctx,
                                                             std::chrono::milliseconds timeout) {
  StartupLog log("nccl", ctx.rank);
  auto comm = std::make_unique<NcclCommunicator>(ctx.rank, ctx.world_size);
  DP_TRY(comm->start(ctx, timeout, log));
  log.done();
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace dp::detail
