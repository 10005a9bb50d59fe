// Backend::gloo: TCP collectives on host buffers; all_reduce goes through
// shared memory among the ranks of each host and over TCP between one
// leader per host (shm_reducer.hpp). Every
// collective runs on the communicator's OpQueue worker; the daemon's abort
// push fails every pending handle at once, with the daemon's reason (which
// names the rank).
#include <gloo/allgather.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>

#include <array>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "arg_checks.hpp"
#include "backends.hpp"
#include "dp/params.hpp"
#include "gloo_sockets.hpp"
#include "gloo_store.hpp"
#include "gloo_sum.hpp"
#include "host_identity.hpp"
#include "op_queue.hpp"
#include "reduce_kernels.hpp"
#include "route_address.hpp"
#include "shm_reducer.hpp"
#include "startup_log.hpp"

namespace dp::detail {
namespace {

// How long a failed collective waits for the daemon to explain the failure:
// a dead neighbour closes our socket a little before the daemon's push.
std::chrono::milliseconds abort_reason_grace() {
  return std::chrono::milliseconds(param(Param::abort_grace_ms));
}

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
  return std::string(op) + " (gloo, rank " + std::to_string(rank) + " of " + std::to_string(size) +
         ")";
}

// A failed op's error. With a daemon, its abort reason (which names the dead
// rank) if it arrives within the grace: that is what the user needs to read.
Error explain_failure(const char* op, int rank, int size, const std::shared_ptr<AbortSignal>& abort,
                      bool has_daemon, Errc code, const std::string& what) {
  const std::string where = op_label(op, rank, size);
  if (has_daemon) {
    if (auto reason = abort->wait_for(abort_reason_grace())) {
      return Error{Errc::aborted, where + ": job aborted: " + reason->message};
    }
  }
  return Error{code, where + " failed: " + what};
}

// What gloo threw (its only error channel): the first line of its message,
// and the code its type says. This gloo has no timeout type: a wait that
// reaches its deadline throws gloo::IoException, so an IoException at or
// after the deadline is a timeout, one before it a broken connection.
struct GlooFailure {
  Errc code;
  std::string what;
};

template <class F>
std::optional<GlooFailure> catch_gloo(std::chrono::milliseconds timeout, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  GlooFailure fail{Errc::connection, {}};
  try {
    f();
    return std::nullopt;
  } catch (const gloo::IoException& e) {
    if (std::chrono::steady_clock::now() - start >= timeout) fail.code = Errc::timeout;
    fail.what = e.what();
  } catch (const std::exception& e) {
    fail.what = e.what();
  } catch (...) {
    fail.what = "unknown exception";
  }
  // gloo's messages are multi-line with source locations; keep the first line.
  if (auto nl = fail.what.find('\n'); nl != std::string::npos) fail.what.resize(nl);
  return fail;
}

// Runs one gloo call of this communicator, its failure as a value.
template <class F>
Result<void> run_gloo(const char* op, int rank, int size, const std::shared_ptr<AbortSignal>& abort,
                      bool has_daemon, std::chrono::milliseconds timeout, F&& f) {
  auto fail = catch_gloo(timeout, f);
  if (!fail) return {};
  return explain_failure(op, rank, size, abort, has_daemon, fail->code, fail->what);
}

// The reducer, once start-up has built it, for the abort callback (which runs
// on the client's I/O thread) to wake its waits.
class ShmSlot {
 public:
  void set(std::shared_ptr<ShmReducer> r) {
    std::lock_guard<std::mutex> lock(m_);
    r_ = std::move(r);
  }
  void abort() {
    std::lock_guard<std::mutex> lock(m_);
    if (r_) r_->abort();
  }

 private:
  std::mutex m_;
  std::shared_ptr<ShmReducer> r_;
};

// A name no other segment has: the job id for whoever lists /dev/shm, and
// 64 random bits.

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int size, const ResolvedOptions& opts)
      : rank_(rank), size_(size), timeout_(opts.timeout), want_shm_(opts.shared_memory) {}

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
      std::shared_ptr<ShmSlot> shm = shm_slot_;
      store_.client->on_abort([q, sig, sockets, shm](const Error& e) {
        sig->set(e);
        q->fail_all(make_error(Errc::aborted, "job aborted: " + e.message));
        // gloo cannot cancel an op: break its connections so every op blocked
        // in it fails now, before the caller is told (its buffers stay ours
        // until then), and so do the peers' ops on the other ends.
        sockets->shut_down();
        shm->abort();
      });
    }
    const std::string peer = ctx.route_host();
    std::string local = "127.0.0.1";
    if (!peer.empty()) {
      auto addr = net::local_address_towards(peer);
      if (!addr) return addr.error();
      local = *addr;
    }
    log.phase("route to master -> " + local);
    DP_TRY(run_gloo("rendezvous", rank_, size_, abort_, store_.client != nullptr, timeout_, [&] {
      device_ = create_device(local, static_cast<int>(param(Param::gloo_loop_nice)));
      auto gctx = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      gctx->setTimeout(timeout_);
      // A per-process generation keeps a second communicator's keys apart.
      static std::atomic<int> generation{0};
      key_prefix_ = "dp/gloo/" + std::to_string(generation++);
      connect_full_mesh(*gctx, key_prefix_, store_.store, device_);
      sockets_->record(*gctx, rank_);
      ctx_ = std::move(gctx);
      log.phase("gloo full mesh");
    }));
    if (want_shm_) DP_TRY(start_shared_memory(log));
    return {};
  }

  // Each host's leader creates its segment; every rank learns where to open
  // it and opens it. What failed on this rank, if anything (shm_ stays empty).
  Result<std::optional<Error>> open_segment(const HostGroups& g, size_t chunk) {
    constexpr size_t kName = 96;  // exchanged as 32-bit words
    alignas(4) char name[kName] = {};
    std::vector<char> names(kName * static_cast<size_t>(size_));
    std::optional<Error> failure;
    if (g.local_ranks.size() == 1) {
      shm_ = ShmReducer::alone(rank_, chunk);
    } else if (g.local_rank == 0) {
      auto r = ShmReducer::create(g.local_ranks, chunk);
      if (r) {
        shm_ = *r;
        std::snprintf(name, sizeof name, "%s", shm_->share_path().c_str());
      } else {
        failure = r.error();
      }
    }
    DP_TRY(all_gather(name, names.data(), kName / 4, DType::i32));
    const char* leader_name = names.data() + kName * static_cast<size_t>(g.local_ranks.front());
    if (g.local_rank != 0 && leader_name[0] != '\0') {
      auto r = ShmReducer::open(leader_name, g.local_rank, g.local_ranks, chunk);
      if (r) shm_ = *r;
      else failure = r.error();
    }
    return failure;
  }

  // Whether every rank opened its host's segment. Shared memory is an
  // optimisation: without it on one rank, every rank stays on TCP, and the
  // first rank that failed says why, once.
  Result<bool> every_rank_attached(const std::optional<Error>& failure) {
    std::vector<int32_t> ok(static_cast<size_t>(size_));
    const int32_t mine_ok = shm_ ? 1 : 0;
    DP_TRY(all_gather(&mine_ok, ok.data(), 1, DType::i32));
    // Every rank has opened it (or failed): the descriptor has served its purpose.
    if (shm_) shm_->stop_sharing();
    for (int r = 0; r < size_; ++r) {
      if (ok[static_cast<size_t>(r)]) continue;
      shm_.reset();
      if (r == rank_) {
        std::fprintf(stderr,
                     "slurm-dp: rank %d: warning: %s; all_reduce goes over TCP (DP_SHM=off skips "
                     "the attempt)\n",
                     rank_, failure ? failure->message.c_str() : "shared memory unavailable");
      }
      return false;
    }
    return true;
  }

  // Ranks that share a host all_reduce through shared memory; with several
  // hosts, their leaders then join the hosts over TCP. All ranks take the
  // same decisions: each learns every rank's host and every attach outcome.
  Result<void> start_shared_memory(StartupLog& log) {
    const auto mine = domain_digest(shared_memory_domain());
    std::vector<std::array<uint64_t, 2>> all(static_cast<size_t>(size_));
    DP_TRY(all_gather(mine.data(), all.data(), 2, DType::i64));
    const HostGroups g = group_by_host(all, rank_);
    if (g.largest_host == 1) {
      log.phase("one rank per host: all_reduce over tcp");
      return {};
    }

    const size_t chunk = ShmReducer::chunk_bytes_for(g.largest_host);
    auto failure = open_segment(g, chunk);
    DP_TRY(failure);
    auto attached = every_rank_attached(*failure);
    DP_TRY(attached);
    if (!*attached) {
      log.phase("shared memory unavailable: all_reduce over tcp");
      return {};
    }
    shm_->attach_peers();
    hosts_ = static_cast<int>(g.leaders.size());
    if (!g.single_host()) DP_TRY(join_hosts(g));
    shm_slot_->set(shm_);
    const std::string here = g.local_ranks.size() == 1
                                 ? std::string("alone on this host")
                                 : std::to_string(g.local_ranks.size()) + " ranks and " +
                                       std::to_string(shm_->bytes() >> 20) + " MiB on this host";
    log.phase("all_reduce through shared memory: " + here + ", " + std::to_string(hosts_) +
              " host(s)");
    return {};
  }

  // The hosts' leaders form their own gloo context; each leader's reducer
  // sums every chunk through it.
  Result<void> join_hosts(const HostGroups& g) {
    ShmReducer::CrossHost stage;
    if (g.leader_index >= 0) {
      std::shared_ptr<gloo::rendezvous::Context> leaders;
      DP_TRY(run_gloo(
          "shared-memory setup", rank_, size_, abort_, store_.client != nullptr, timeout_, [&] {
            leaders = std::make_shared<gloo::rendezvous::Context>(
                g.leader_index, static_cast<int>(g.leaders.size()));
            leaders->setTimeout(timeout_);
            connect_full_mesh(*leaders, key_prefix_ + "/leaders", store_.store, device_);
            sockets_->record(*leaders, g.leader_index);
          }));
      stage = [leaders, timeout = timeout_, tag = uint32_t{0}](void* data, size_t n,
                                                               DType type) mutable -> Result<void> {
        auto fail = catch_gloo(
            timeout, [&] { gloo_sum(leaders, tag++ & 0xffffff, timeout, data, n, type); });
        if (!fail) return {};
        return make_error(fail->code, "between hosts: " + fail->what);
      };
    }
    shm_->set_cross_host(size_, std::move(stage));
    return {};
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Backend backend() const override { return Backend::gloo; }
  std::string describe() const override {
    if (!shm_) return "gloo over tcp";
    if (hosts_ == 1) {
      return "gloo over tcp, all_reduce through shared memory (" + std::to_string(size_) +
             " ranks on one host)";
    }
    return "gloo over tcp, all_reduce through shared memory within each of " +
           std::to_string(hosts_) + " hosts, then tcp between them";
  }

  Result<void> all_reduce(void* buf, size_t count, DType type, ReduceOp op) override {
    return wait_now(all_reduce_async(buf, count, type, op));
  }

  Result<std::unique_ptr<Work>> all_reduce_async(void* buf, size_t count, DType type,
                                                 ReduceOp op) override {
    DP_TRY(check_buffer("all_reduce", buf, count));
    if (count == 0) return std::unique_ptr<Work>(new ReadyWork({}));
    if (shm_) {
      return submit_result("all_reduce", [buf, count, type, op, shm = shm_, sockets = sockets_,
                                          timeout = timeout_] {
        auto r = shm->all_reduce(buf, count, type, op, std::chrono::steady_clock::now() + timeout);
        if (!r) {
          // Fail this host's peers waiting on us, and, through our sockets,
          // the other hosts' leaders waiting in TCP: nobody waits for a
          // timeout because of one failure.
          shm->abort();
          sockets->shut_down();
        }
        return r;
      });
    }
    return submit("all_reduce", [buf, count, type, op, gctx = ctx_, tag = next_tag(),
                                 timeout = timeout_, size = size_] {
      gloo_sum(gctx, tag, timeout, buf, count, type);
      if (op == ReduceOp::avg) divide_in_place(buf, count, type, size);
    });
  }

  Result<void> broadcast(void* buf, size_t count, DType type, int root) override {
    DP_TRY(check_buffer("broadcast", buf, count));
    DP_TRY(check_root("broadcast", root, size_));
    if (count == 0) return {};
    return wait_now(submit(
        "broadcast", [buf, count, type, root, gctx = ctx_, tag = next_tag(), timeout = timeout_] {
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
  std::string op_label(const char* op) const { return detail::op_label(op, rank_, size_); }

  uint32_t next_tag() { return tag_.fetch_add(1) & 0xffffff; }

  template <class F>
  Result<std::unique_ptr<Work>> submit(const char* name, F f) {
    return submit_result(name, [f = std::move(f), timeout = timeout_]() mutable -> Result<void> {
      auto fail = catch_gloo(timeout, f);
      if (!fail) return {};
      return make_error(fail->code, fail->what);
    });
  }

  // submit() for an op that reports errors as values.
  template <class F>
  Result<std::unique_ptr<Work>> submit_result(const char* name, F f) {
    if (!ctx_) return make_error(Errc::internal, std::string(name) + ": communicator not started");
    auto state = queue_->submit(
        op_label(name),
        [name, rank = rank_, size = size_, abort = abort_, daemon = store_.client != nullptr,
         f = std::move(f)]() mutable -> Result<void> {
          auto r = f();
          if (r) return r;
          return explain_failure(name, rank, size, abort, daemon, r.error().code,
                                 r.error().message);
        });
    return std::unique_ptr<Work>(new OpWork(std::move(state)));
  }

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  bool want_shm_;
  std::atomic<uint32_t> tag_{0};
  std::shared_ptr<AbortSignal> abort_ = std::make_shared<AbortSignal>();
  std::shared_ptr<gloo::Context> ctx_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::string key_prefix_;  // of this communicator's keys in the job store
  int hosts_ = 0;           // with shm_: how many hosts the ranks span
  std::shared_ptr<GlooSockets> sockets_ = std::make_shared<GlooSockets>();
  std::shared_ptr<ShmReducer> shm_;
  std::shared_ptr<ShmSlot> shm_slot_ = std::make_shared<ShmSlot>();
  std::unique_ptr<OpQueue> queue_;
  JobStore store_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> make_gloo_communicator(const Context& ctx,
                                                             const ResolvedOptions& opts) {
  // gloo writes with plain writev: a write to a peer that died (or whose
  // socket an abort shut down) would kill this process with SIGPIPE instead of
  // failing the op. Ignore SIGPIPE unless the program chose a handler itself
  // (Python, and so PyTorch, does the same at start-up).
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
  StartupLog log("gloo", ctx.rank);
  auto comm = std::make_unique<GlooCommunicator>(ctx.rank, ctx.world_size, opts);
  DP_TRY(comm->start(ctx, log));
  log.done();
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace dp::detail
