// Backend::nccl: collectives on device buffers. The communicator is created
// non-blocking (ncclConfig_t.blocking = 0) so that start-up, every wait and
// the daemon's abort can all end in ncclCommAbort instead of a hang.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arg_checks.hpp"
#include "backends.hpp"
#include "cuda_device.hpp"
#include "dp/nccl_roots.hpp"
#include "nccl_module.hpp"
#include "nccl_support.hpp"

namespace dp::detail {

int nccl_cuda_devices() noexcept {
  int n = 0;  // cudaGetDeviceCount leaves it unwritten on error (no driver: 35)
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

namespace {

// How many bootstrap roots this world starts from: one per ranks_per_root
// (DP_NCCL_RANKS_PER_ROOT) where the NCCL in use has
// ncclCommInitRankScalable (2.23+), else one. Every rank computes the same
// count from the same environment and NCCL.
int root_count(int world, int ranks_per_root) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) version = 0;
  return version >= NCCL_VERSION(2, 23, 0) ? nccl_root_count(world, ranks_per_root) : 1;
}

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

// Polls that start with yields (a short collective ends in microseconds)
// and back off to sleeps of up to 1 ms, so a long wait does not spin a core.
class Backoff {
 public:
  void pause() {
    if (++n_ <= 32) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, std::chrono::microseconds(1000));
  }

 private:
  int n_ = 0;
  std::chrono::microseconds sleep_{10};
};

// The communicator handle, shared with handles and the abort callback. Every
// use of `comm` holds `m`: the daemon's thread may abort (and so free) it at
// any time, and ncclCommGetAsyncError on a freed communicator is a
// use-after-free.
class NcclShared {
 public:
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;    // NCCL's own stream
  cudaStream_t producer = nullptr;  // the caller's compute stream (null: legacy default stream)
  cudaEvent_t produced = nullptr;   // recorded on `producer` before each collective
  std::chrono::milliseconds timeout{0};
  std::mutex m;

  void abort(const Error& why) {
    std::lock_guard<std::mutex> lock(m);
    abort_locked(why);
  }
  void abort_locked(const Error& why) {
    if (!reason_) reason_ = why;
    if (comm != nullptr && !aborted_) {
      (void)ncclCommAbort(comm);  // frees comm; its result cannot change what we report
      aborted_ = true;
    }
  }
  bool failed_locked() const { return reason_.has_value() || aborted_; }

  // The communicator's state: an error once it failed or was aborted (a
  // collective cut short by an abort is never a success), in_progress
  // while a non-blocking call is still running.
  Result<void> poll(const std::string& what, bool* in_progress = nullptr) {
    std::lock_guard<std::mutex> lock(m);
    if (reason_)
      return make_error(reason_->code == Errc::timeout ? Errc::timeout : Errc::aborted,
                        what + ": " + reason_->message);
    if (aborted_ || comm == nullptr)
      return make_error(Errc::aborted, what + ": the communicator was aborted");
    ncclResult_t r = ncclSuccess;
    if (ncclResult_t q = ncclCommGetAsyncError(comm, &r); q != ncclSuccess) r = q;
    if (in_progress) *in_progress = r == ncclInProgress;
    if (r == ncclSuccess || r == ncclInProgress) return {};
    Error e = nccl_error(r, what);
    abort_locked(e);
    return e;
  }

  // Waits, bounded by `deadline`, until a non-blocking NCCL call has left
  // ncclInProgress; aborts the communicator when the deadline passes.
  Result<void> settle(ncclResult_t r, const std::string& what, Clock::time_point deadline) {
    if (r != ncclSuccess && r != ncclInProgress) {
      Error e = nccl_error(r, what);
      abort(e);
      return e;
    }
    Backoff backoff;
    for (bool busy = r == ncclInProgress; busy;) {
      DP_TRY(poll(what, &busy));
      if (!busy) break;
      if (Clock::now() > deadline) return expire(what);
      backoff.pause();
    }
    return {};
  }

  // The deadline passed: abort, and say which limit.
  Error expire(const std::string& what) {
    Error e = make_error(Errc::timeout, what + " did not finish within " +
                                            std::to_string(timeout.count()) +
                                            " ms (DP_TIMEOUT_MS); communicator aborted");
    abort(e);
    return e;
  }

 private:
  std::optional<Error> reason_;
  bool aborted_ = false;
};

class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<NcclShared> s, cudaEvent_t ev, std::string what)
      : s_(std::move(s)), ev_(ev), what_(std::move(what)) {}
  ~NcclWork() override { (void)cudaEventDestroy(ev_); }

  Result<void> wait() override {
    const auto deadline = Clock::now() + s_->timeout;
    Backoff backoff;
    while (true) {
      const cudaError_t q = cudaEventQuery(ev_);
      // An abort completes the collective's kernels early: the event alone
      // does not prove success, the communicator's state must agree.
      if (q == cudaSuccess) return s_->poll(what_);
      if (q != cudaErrorNotReady) {
        Error e = cuda_error(q, what_);
        s_->abort(e);
        return e;
      }
      DP_TRY(s_->poll(what_));
      if (Clock::now() > deadline) return s_->expire(what_);
      backoff.pause();
    }
  }

 private:
  std::shared_ptr<NcclShared> s_;
  cudaEvent_t ev_;
  std::string what_;
};

// How long teardown may take before the communicator is aborted instead.
constexpr std::chrono::milliseconds kTeardownLimit{10'000};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  ~NcclCommunicator() override {
    // Finalize while the daemon's abort callback is still installed, so a
    // peer that dies now still ends this wait at once.
    teardown();
    if (store_.goodbye) store_.goodbye();
    store_ = NcclStore();  // no abort callback after this point
    if (s_->produced != nullptr) (void)cudaEventDestroy(s_->produced);
    if (s_->stream != nullptr) (void)cudaStreamDestroy(s_->stream);
    if (scratch_ != nullptr) (void)cudaFree(scratch_);
  }

  Result<void> start(const Context& ctx, std::chrono::milliseconds timeout, const NcclHost& host) {
    NcclPhases& log = *host.phases;
    s_->timeout = timeout;
    auto device = select_cuda_device(ctx.tiles, ctx.local_rank, nccl_cuda_devices());
    if (!device) return device.error();
    if (auto e = cudaSetDevice(*device); e != cudaSuccess) return cuda_error(e, "cudaSetDevice");
    if (auto e = cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking); e != cudaSuccess) {
      return cuda_error(e, "cudaStreamCreate");
    }
    if (auto e = cudaEventCreateWithFlags(&s_->produced, cudaEventDisableTiming);
        e != cudaSuccess) {
      return cuda_error(e, "cudaEventCreate");
    }
    log.phase("device " + std::to_string(*device));
    const int roots = root_count(size_, host.ranks_per_root);
    std::vector<ncclUniqueId> ids(1);
    if (size_ == 1) {
      // Nobody to meet: no store, no daemon.
      if (ncclResult_t r = ncclGetUniqueId(ids.data()); r != ncclSuccess)
        return nccl_error(r, "ncclGetUniqueId");
    } else {
      auto js = host.open_store(ctx, timeout);
      if (!js) return js.error();
      store_ = std::move(*js);
      log.phase("connect to store");
      if (store_.on_abort) {
        std::shared_ptr<NcclShared> s = s_;
        store_.on_abort([s](const Error& e) {
          s->abort(make_error(Errc::aborted, "job aborted: " + e.message));
        });
      }
      static std::atomic<int> generation{0};
      auto got = exchange_nccl_ids(*store_.store, store_.publish_once, rank_, size_, roots,
                                   "dp/nccl/" + std::to_string(generation++) + "/id");
      if (!got) return got.error();
      ids = std::move(*got);
      log.phase(roots > 1 ? "unique id exchange (" + std::to_string(roots) + " roots)"
                          : std::string("unique id exchange"));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(s_->m);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 23, 0)
      if (ids.size() > 1)
        r = ncclCommInitRankScalable(&s_->comm, size_, rank_, static_cast<int>(ids.size()),
                                     ids.data(), &config);
      else
#endif
        r = ncclCommInitRankConfig(&s_->comm, size_, ids[0], rank_, &config);
    }
    DP_TRY(s_->settle(r, "ncclCommInitRank", Clock::now() + timeout));
    log.phase("ncclCommInitRank");
    return {};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::nccl; }
  std::string describe() const override { return "nccl"; }

  Result<void> set_stream(void* cuda_stream) override {
    std::lock_guard<std::mutex> lock(s_->m);
    s_->producer = static_cast<cudaStream_t>(cuda_stream);
    return {};
  }

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
      if (auto e = cudaMalloc(&scratch_, sizeof(int)); e != cudaSuccess)
        return cuda_error(e, "barrier: cudaMalloc");
    }
    return all_reduce(scratch_, 1, DType::i32, ReduceOp::sum);
  }

 private:
  // A healthy communicator is finalized and destroyed, each step bounded;
  // one that failed, or whose teardown runs out of time, is aborted, never
  // destroyed (ncclCommDestroy after an error can hang).
  void teardown() {
    const auto deadline = Clock::now() + std::min(s_->timeout, kTeardownLimit);
    const std::string what = "nccl teardown (rank " + std::to_string(rank_) + ")";
    Result<void> ok = drain_stream(what, deadline);
    if (ok) {
      ncclResult_t r;
      {
        std::lock_guard<std::mutex> lock(s_->m);
        if (s_->comm == nullptr || s_->failed_locked()) return;
        r = ncclCommFinalize(s_->comm);
      }
      ok = s_->settle(r, what + ": ncclCommFinalize", deadline);
    }
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->comm == nullptr || s_->failed_locked()) return;  // aborted on the way
    if (ok) {
      const ncclResult_t r = ncclCommDestroy(s_->comm);
      s_->comm = nullptr;
      if (r == ncclSuccess) return;
      ok = nccl_error(r, what + ": ncclCommDestroy");
    } else {
      s_->abort_locked(ok.error());
    }
    std::fprintf(stderr, "slurm-dp: %s\n", ok.error().message.c_str());
  }

  // The NCCL stream's queued work ends, or the deadline aborts it.
  Result<void> drain_stream(const std::string& what, Clock::time_point deadline) {
    if (s_->stream == nullptr) return {};
    Backoff backoff;
    while (true) {
      const cudaError_t q = cudaStreamQuery(s_->stream);
      if (q == cudaSuccess) return {};
      if (q != cudaErrorNotReady) return cuda_error(q, what);
      DP_TRY(s_->poll(what));
      if (Clock::now() > deadline)
        return make_error(Errc::timeout, what + ": queued collectives did not end within " +
                                             std::to_string(kTeardownLimit.count()) + " ms");
      backoff.pause();
    }
  }

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
      if (s_->failed_locked()) {
        (void)cudaEventDestroy(ev);
        return make_error(Errc::aborted, name + ": the communicator was aborted");
      }
      // The buffer was produced by work queued on the caller's stream; the
      // NCCL stream does not wait for another stream by itself.
      cudaError_t e = cudaEventRecord(s_->produced, s_->producer);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(s_->stream, s_->produced, 0);
      if (e != cudaSuccess) {
        (void)cudaEventDestroy(ev);
        return cuda_error(e, name + ": ordering after the compute stream");
      }
      r = call(s_->comm, s_->stream);
    }
    if (auto settled = s_->settle(r, name, Clock::now() + s_->timeout); !settled) {
      (void)cudaEventDestroy(ev);
      return settled.error();
    }
    if (auto e = cudaEventRecord(ev, s_->stream); e != cudaSuccess) {
      (void)cudaEventDestroy(ev);
      return cuda_error(e, name);
    }
    return std::unique_ptr<Work>(new NcclWork(s_, ev, name));
  }

  int rank_;
  int size_;
  void* scratch_ = nullptr;
  std::shared_ptr<NcclShared> s_ = std::make_shared<NcclShared>();
  NcclStore store_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_nccl_backend(const Context& ctx,
                                                        std::chrono::milliseconds timeout,
                                                        const NcclHost& host) {
  auto comm = std::make_unique<NcclCommunicator>(ctx.rank, ctx.world_size);
  DP_TRY(comm->start(ctx, timeout, host));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace dp::detail
