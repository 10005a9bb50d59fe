// dp::init: environment -> backend choice -> a working communicator.
#include "dp/communicator.hpp"

#include <string>

#include "backends.hpp"
#include "dp/env_names.hpp"
#include "dp/params.hpp"
#include "env_parse.hpp"
#include "single_communicator.hpp"

namespace dp {

size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

const char* backend_name(Backend b) noexcept {
  switch (b) {
    case Backend::automatic: return "auto";
    case Backend::gloo: return "gloo";
    case Backend::nccl: return "nccl";
    case Backend::single: return "single";
  }
  return "unknown";
}

namespace detail {

namespace {

// DP_SHM and DP_PROGRESS: their choices, or an error naming them.
Result<void> read_switches(ResolvedOptions& r) {
  if (auto v = env_value(env::kShm)) {
    if (*v == "off") {
      r.shared_memory = false;
    } else if (*v != "auto") {
      return make_error(Errc::invalid_argument,
                        std::string(env::kShm) + "='" + *v +
                            "' is not a choice; use auto (ranks on one host all_reduce through "
                            "shared memory, the default) or off (always TCP)");
    }
  }
  if (auto v = env_value(env::kProgress); v && *v != "on" && *v != "off") {
    return make_error(
        Errc::invalid_argument,
        std::string(env::kProgress) + "='" + *v +
            "' is not a choice; use on (collective counters on the heartbeats, for hang and "
            "straggler detection; the default) or off");
  }
  return {};
}

// The backend the program gets: its own choice, else DP_BACKEND's, else
// NCCL where a GPU is usable; world 1 needs no communication at all.
Result<Backend> chosen_backend(const Context& ctx, Backend want, int cuda_devices) {
  // The user's variable wins over the program's default choice only.
  if (auto b = env_value(env::kBackend); b && want == Backend::automatic) {
    if (*b == "gloo") {
      want = Backend::gloo;
    } else if (*b == "nccl") {
      want = Backend::nccl;
    } else if (*b == "auto") {
      want = Backend::automatic;
    } else {
      return make_error(Errc::invalid_argument, std::string(env::kBackend) + "='" + *b +
                                                    "' is not a backend; use gloo, nccl or auto");
    }
  }
  if (want == Backend::nccl) return Backend::nccl;  // even for world 1: device buffers asked for
  if (ctx.world_size == 1) return Backend::single;
  if (want == Backend::single)
    return make_error(Errc::invalid_argument, "backend single needs WORLD_SIZE=1 but WORLD_SIZE=" +
                                                  std::to_string(ctx.world_size) +
                                                  "; use gloo, nccl or automatic");
  if (want == Backend::gloo) return Backend::gloo;
  return cuda_devices > 0 ? Backend::nccl : Backend::gloo;
}

}  // namespace

Result<ResolvedOptions> resolve_options(const Context& ctx, const InitOptions& opts,
                                        int cuda_devices) {
  ResolvedOptions r;
  r.timeout = std::chrono::milliseconds(opts.timeout_ms);
  // Every integer setting of the table is checked here, at start-up, so a
  // bad value fails init instead of being replaced by its default later.
  DP_TRY(check_params());
  if (auto t = env_value(env::kTimeoutMs)) {
    auto ms = parse_param(Param::timeout_ms, *t);
    if (!ms) return ms.error();
    r.timeout = std::chrono::milliseconds(*ms);
  } else if (opts.timeout_ms <= 0) {
    return make_error(Errc::invalid_argument,
                      "InitOptions.timeout_ms=" + std::to_string(opts.timeout_ms) +
                          " must be positive (milliseconds)");
  }
  DP_TRY(read_switches(r));
  auto backend = chosen_backend(ctx, opts.backend, cuda_devices);
  DP_TRY(backend);
  r.backend = *backend;
  return r;
}

}  // namespace detail

Result<std::unique_ptr<Communicator>> init(const Context& ctx, const InitOptions& opts) {
  auto resolved = detail::resolve_options(ctx, opts, detail::usable_cuda_devices());
  if (!resolved) return resolved.error();
  detail::print_params_once(ctx.rank);
  switch (resolved->backend) {
    case Backend::single: return detail::make_single_communicator();
    case Backend::gloo: return detail::make_gloo_communicator(ctx, *resolved);
    case Backend::nccl: return detail::make_nccl_communicator(ctx, resolved->timeout);
    case Backend::automatic: break;
  }
  return make_error(Errc::internal, "init: backend was not resolved");
}

Result<std::unique_ptr<Communicator>> init(const InitOptions& opts) {
  auto ctx = Context::from_environment();
  if (!ctx) return ctx.error();
  return init(*ctx, opts);
}

}  // namespace dp
