// The C API (dp.h) over the C++ one. Every entry point catches everything:
// no exception may cross a C ABI.
#include "dp/dp.h"

#include <exception>
#include <memory>
#include <new>
#include <string>

#include "dp/communicator.hpp"

struct dp_comm {
  std::unique_ptr<dp::Communicator> impl;
};
struct dp_work {
  std::unique_ptr<dp::Work> impl;
};

namespace {

thread_local std::string g_last_error;

int fail(const dp::Error& e) {
  g_last_error = std::string(dp::errc_name(e.code)) + ": " + dp::describe(e);
  return static_cast<int>(e.code);
}

int fail(dp::Errc code, const std::string& msg) { return fail(dp::make_error(code, msg)); }

int report(const dp::Result<void>& r) {
  if (r.ok()) return 0;
  return fail(r.error());
}

// Runs f, mapping exceptions (bad_alloc mostly) to error codes.
template <class F>
int guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(dp::Errc::limit, "out of memory");
  } catch (const std::exception& e) {
    return fail(dp::Errc::internal, e.what());
  } catch (...) {
    return fail(dp::Errc::internal, "unknown exception");
  }
}

bool valid_dtype(int t) { return t >= DP_F32 && t <= DP_I64; }
bool valid_op(int op) { return op == DP_SUM || op == DP_AVG; }

int check_comm(const dp_comm* c, const char* fn) {
  if (c == nullptr || !c->impl) {
    return fail(dp::Errc::invalid_argument, std::string(fn) + ": comm is NULL; call dp_init first");
  }
  return 0;
}

int check_type(int dtype, const char* fn) {
  if (!valid_dtype(dtype)) {
    return fail(dp::Errc::invalid_argument,
                std::string(fn) + ": dtype " + std::to_string(dtype) + " is not a dp_dtype value");
  }
  return 0;
}

}  // namespace

extern "C" {

const char* dp_last_error(void) { return g_last_error.c_str(); }

int dp_init_with(int backend, int timeout_ms, dp_comm** out) {
  return guarded([&]() -> int {
    if (out == nullptr) return fail(dp::Errc::invalid_argument, "dp_init: out is NULL");
    *out = nullptr;
    if (backend < DP_BACKEND_AUTO || backend > DP_BACKEND_SINGLE) {
      return fail(dp::Errc::invalid_argument, "dp_init_with: backend " + std::to_string(backend) +
                                                  " is not a dp_backend value");
    }
    dp::InitOptions o;
    o.backend = static_cast<dp::Backend>(backend);
    if (timeout_ms > 0) o.timeout_ms = timeout_ms;
    auto c = dp::init(o);
    if (!c) return fail(c.error());
    *out = new dp_comm{std::move(*c)};
    return 0;
  });
}

int dp_init(dp_comm** out) { return dp_init_with(DP_BACKEND_AUTO, 0, out); }

void dp_finalize(dp_comm* comm) {
  (void)guarded([&]() -> int {
    delete comm;
    return 0;
  });
}

int dp_rank(const dp_comm* comm) { return comm && comm->impl ? comm->impl->rank() : -1; }
int dp_size(const dp_comm* comm) { return comm && comm->impl ? comm->impl->size() : -1; }
const char* dp_backend_name(const dp_comm* comm) {
  return comm && comm->impl ? dp::backend_name(comm->impl->backend()) : "none";
}

int dp_all_reduce(dp_comm* comm, void* buf, size_t count, int dtype, int op) {
  return guarded([&]() -> int {
    if (int rc = check_comm(comm, "dp_all_reduce")) return rc;
    if (int rc = check_type(dtype, "dp_all_reduce")) return rc;
    if (!valid_op(op))
      return fail(dp::Errc::invalid_argument, "dp_all_reduce: op must be DP_SUM or DP_AVG");
    return report(comm->impl->all_reduce(buf, count, static_cast<dp::DType>(dtype),
                                         static_cast<dp::ReduceOp>(op)));
  });
}

int dp_all_reduce_async(dp_comm* comm, void* buf, size_t count, int dtype, int op, dp_work** out) {
  return guarded([&]() -> int {
    if (out == nullptr) return fail(dp::Errc::invalid_argument, "dp_all_reduce_async: out is NULL");
    *out = nullptr;
    if (int rc = check_comm(comm, "dp_all_reduce_async")) return rc;
    if (int rc = check_type(dtype, "dp_all_reduce_async")) return rc;
    if (!valid_op(op)) {
      return fail(dp::Errc::invalid_argument, "dp_all_reduce_async: op must be DP_SUM or DP_AVG");
    }
    auto w = comm->impl->all_reduce_async(buf, count, static_cast<dp::DType>(dtype),
                                          static_cast<dp::ReduceOp>(op));
    if (!w) return fail(w.error());
    *out = new dp_work{std::move(*w)};
    return 0;
  });
}

int dp_work_wait(dp_work* work) {
  return guarded([&]() -> int {
    if (work == nullptr) return fail(dp::Errc::invalid_argument, "dp_work_wait: work is NULL");
    std::unique_ptr<dp_work> owned(work);
    return report(owned->impl->wait());
  });
}

int dp_broadcast(dp_comm* comm, void* buf, size_t count, int dtype, int root) {
  return guarded([&]() -> int {
    if (int rc = check_comm(comm, "dp_broadcast")) return rc;
    if (int rc = check_type(dtype, "dp_broadcast")) return rc;
    return report(comm->impl->broadcast(buf, count, static_cast<dp::DType>(dtype), root));
  });
}

int dp_all_gather(dp_comm* comm, const void* send, void* recv, size_t count, int dtype) {
  return guarded([&]() -> int {
    if (int rc = check_comm(comm, "dp_all_gather")) return rc;
    if (int rc = check_type(dtype, "dp_all_gather")) return rc;
    return report(comm->impl->all_gather(send, recv, count, static_cast<dp::DType>(dtype)));
  });
}

int dp_barrier(dp_comm* comm) {
  return guarded([&]() -> int {
    if (int rc = check_comm(comm, "dp_barrier")) return rc;
    return report(comm->impl->barrier());
  });
}

}  // extern "C"
