// Backend::gloo: TCP collectives on host buffers. Every collective runs on
// the communicator's OpQueue worker; the daemon's abort push fails every
// pending handle at once, with the daemon's reason (which names the rank).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>

#include <atomic>
#include <csignal>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string>

#include "arg_checks.hpp"
#include "backends.hpp"
#include "gloo_sockets.hpp"
#include "gloo_store.hpp"
#include "route_address.hpp"
#include "op_queue.hpp"
#include "reduce_kernels.hpp"
#include "startup_log.hpp"

namespace dp::detail {
namespace {

// How long a failed collective waits for the daemon to explain the failure:
// a dead neighbour closes our socket a little before the daemon's push.
constexpr std::chrono::milliseconds kAbortReasonGrace{3'000};

// The daemon's abort, shared by the abort callback and the worker thread.
class AbortSignal {
 public:
  void set(const Error& e) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!err_) err_ = e;
    }
    cv_.notify_all();
  }
  std::optional<Error> wait_for(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait_for(lock, d, [&] { return err_.has_value(); });
    return err_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<Error> err_;
};

std::string op_label(const char* op, int rank, int size) {
  return std::string(op) + " (gloo, rank " + std::to_string(rank) + " of " + std::to_string(size) + ")";
}

Errc classify(const std::string& what) {
  if (what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos) {
    return Errc::timeout;
  }
  return Errc::connection;
}

// Runs one gloo call, turning exceptions (gloo's only error channel) into values.
template <class F>
Result<void> run_gloo(const char* op, int rank, int size, const std::shared_ptr<AbortSignal>& abort,
                      bool has_daemon, F&& f) {
  std::string what;
  try {
    f();
    return {};
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "unknown exception";
  }
  const std::string where = op_label(op, rank, size);
  if (has_daemon) {
    if (auto reason = abort->wait_for(kAbortReasonGrace)) {
      return make_error(Errc::aborted, where + ": job aborted: " + reason->message);
    }
  }
  // gloo's messages are multi-line with source locations; keep the first line.
  if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
  return make_error(classify(what), where + " failed: " + what);
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), timeout_(timeout) {}

  ~GlooCommunicator() override {
    // The client's I/O thread calls into queue_ on abort: stop it first.
    if (store_.client) (void)store_.client->goodbye();
    store_.client.reset();
    queue_.reset();
  }

  Result<void> start(const Context& ctx, StartupLog& log) {
    auto js = open_job_store(ctx, timeout_);
    if (!js) return js.error();
    store_ = std::move(*js);
    log.phase("connect to store");
    queue_ = std::make_unique<OpQueue>();
    if (store_.client) {
      OpQueue* q = queue_.get();
      std::shared_ptr<AbortSignal> sig = abort_;
      std::shared_ptr<GlooSockets> sockets = sockets_;
      store_.client->on_abort([q, sig, sockets](const Error& e) {
        sig->set(e);
        q->fail_all(make_error(Errc::aborted, "job aborted: " + e.message));
        // gloo cannot cancel an op: break its connections so every op blocked
        // in it fails now, before the caller is told (its buffers stay ours
        // until then), and so do the peers' ops on the other ends.
        sockets->shut_down();
      });
    }
    const std::string& peer = !ctx.master_addr.empty() ? ctx.master_addr
                                                       : ctx.rdv_addr.substr(0, ctx.rdv_addr.rfind(':'));
    std::string local = "127.0.0.1";
    if (!peer.empty()) {
      auto addr = net::local_address_towards(peer);
      if (!addr) return addr.error();
      local = *addr;
    }
    log.phase("route to master -> " + local);
    return run_gloo("rendezvous", rank_, size_, abort_, store_.client != nullptr, [&] {
      gloo::transport::tcp::attr attr;
      attr.hostname = local;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto gctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      gctx->setTimeout(timeout_);
      // A per-process generation keeps a second communicator's keys apart.
      static std::atomic<int> generation{0};
      gloo::rendezvous::PrefixStore prefixed("dp/gloo/" + std::to_string(generation++), *store_.store);
      gctx->connectFullMesh(prefixed, device);
      sockets_->record(*gctx, rank_);
      ctx_ = std::move(gctx);
      log.phase("gloo full mesh");
    });
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::gloo; }

  Result<void> all_reduce(void* buf, size_t count, DType type, ReduceOp op) override {
    return wait_now(all_reduce_async(buf, count, type, op));
  }

  Result<std::unique_ptr<Work>> all_reduce_async(void* buf, size_t count, DType type,
                                                 ReduceOp op) override {
    DP_TRY(check_buffer("all_reduce", buf, count));
    if (count == 0) return std::unique_ptr<Work>(new ReadyWork({}));
    return submit("all_reduce", [buf, count, type, op, gctx = ctx_, tag = next_tag(),
                                  timeout = timeout_, size = size_] {
      gloo::AllreduceOptions o(gctx);
      o.setTag(tag);
      o.setTimeout(timeout);
      set_buffers(o, buf, count, type);
      SumFn sum = sum_function(type);
      o.setReduceFunction([sum](void* out, const void* a, const void* b, size_t n) { sum(out, a, b, n); });
      gloo::allreduce(o);
      if (op == ReduceOp::avg) divide_in_place(buf, count, type, size);
    });
  }

  Result<void> broadcast(void* buf, size_t count, DType type, int root) override {
    DP_TRY(check_buffer("broadcast", buf, count));
    DP_TRY(check_root("broadcast", root, size_));
    if (count == 0) return {};
    return wait_now(submit("broadcast", [buf, count, type, root, gctx = ctx_, tag = next_tag(),
                                       timeout = timeout_] {
      gloo::BroadcastOptions o(gctx);
      o.setTag(tag);
      o.setTimeout(timeout);
      o.setRoot(root);
      o.setOutput(static_cast<uint8_t*>(buf), count * dtype_size(type));
      gloo::broadcast(o);
    }));
  }

  Result<void> all_gather(const void* send, void* recv, size_t count, DType type) override {
    DP_TRY(check_buffer("all_gather", send, count));
    DP_TRY(check_buffer("all_gather", recv, count));
    if (count == 0) return {};
    const size_t bytes = count * dtype_size(type);
    return wait_now(submit("all_gather", [send, recv, bytes, gctx = ctx_, tag = next_tag(),
                                        timeout = timeout_, rank = rank_, size = size_] {
      uint8_t* out = static_cast<uint8_t*>(recv);
      // Without an input gloo gathers in place from this rank's slot.
      uint8_t* mine = out + static_cast<size_t>(rank) * bytes;
      if (send != mine) std::memmove(mine, send, bytes);
      gloo::AllgatherOptions o(gctx);
      o.setTag(tag);
      o.setTimeout(timeout);
      o.setOutput(out, bytes * static_cast<size_t>(size));
      gloo::allgather(o);
    }));
  }

  Result<void> barrier() override {
    return wait_now(submit("barrier", [gctx = ctx_, tag = next_tag(), timeout = timeout_] {
      gloo::BarrierOptions o(gctx);
      o.setTag(tag);
      o.setTimeout(timeout);
      gloo::barrier(o);
    }));
  }

 private:
  static void set_buffers(gloo::AllreduceOptions& o, void* buf, size_t count, DType type) {
    // gloo only needs the element size to cut segments; the sum function knows the type.
    switch (dtype_size(type)) {
      case 2: o.setOutput(static_cast<uint16_t*>(buf), count); break;
      case 4: o.setOutput(static_cast<uint32_t*>(buf), count); break;
      default: o.setOutput(static_cast<uint64_t*>(buf), count); break;
    }
  }

  std::string op_label(const char* op) const { return detail::op_label(op, rank_, size_); }

  uint32_t next_tag() { return tag_.fetch_add(1) & 0xffffff; }

  template <class F>
  Result<std::unique_ptr<Work>> submit(const char* name, F f) {
    if (!ctx_) return make_error(Errc::internal, std::string(name) + ": communicator not started");
    auto state = queue_->submit(op_label(name), [name, rank = rank_, size = size_, abort = abort_,
                                 daemon = store_.client != nullptr, f = std::move(f)]() mutable {
      return run_gloo(name, rank, size, abort, daemon, f);
    });
    return std::unique_ptr<Work>(new OpWork(std::move(state)));
  }

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::atomic<uint32_t> tag_{0};
  std::shared_ptr<AbortSignal> abort_ = std::make_shared<AbortSignal>();
  std::shared_ptr<gloo::Context> ctx_;
  std::shared_ptr<GlooSockets> sockets_ = std::make_shared<GlooSockets>();
  std::unique_ptr<OpQueue> queue_;
  JobStore store_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_gloo_communicator(const Context& ctx,
                                                             std::chrono::milliseconds timeout) {
  // gloo writes with plain writev: a write to a peer that died (or whose
  // socket an abort shut down) would kill this process with SIGPIPE instead of
  // failing the op. Ignore SIGPIPE unless the program chose a handler itself
  // (Python, and so PyTorch, does the same at start-up).
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
  StartupLog log("gloo", ctx.rank);
  auto comm = std::make_unique<GlooCommunicator>(ctx.rank, ctx.world_size, timeout);
  DP_TRY(comm->start(ctx, log));
  log.done();
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace dp::detail
