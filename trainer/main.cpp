// dp-trainer: parse options, pick the device, wire up the communicator, load
// data, train, report. Exit 0 on success (also after a signal-triggered
// checkpoint), 1 on a runtime error, 2 on bad options.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cuda_loader.hpp"
#include "dp/communicator.hpp"
#include "dp/env_names.hpp"
#include "dp/params.hpp"
#include "src/cpu_ops.hpp"
#include "src/options.hpp"
#include "src/stop_signal.hpp"
#include "src/trainer.hpp"

namespace {

// rank < 0: not known yet (before the communicator is up).
int fail(int rank, const dp::Error& e, int code) {
  if (rank < 0) std::fprintf(stderr, "dp-trainer: %s\n", dp::describe(e).c_str());
  else std::fprintf(stderr, "dp-trainer[rank %d]: %s\n", rank, dp::describe(e).c_str());
  return code;
}

// Decided before the communicator exists, so a CPU run never gets NCCL
// (which would be handed host pointers) just because a GPU is visible. The
// CUDA half is a module of the CUDA package: without it, automatic is the CPU.
dp::Result<bool> wants_cuda(dpt::DeviceChoice choice) {
  if (choice == dpt::DeviceChoice::cpu) return false;
  auto module = dpt::cuda_module();
  if (!module) {
    if (choice == dpt::DeviceChoice::cuda)
      return dp::wrap_error(module.error(), "--device cuda: " + module.error().message);
    return false;
  }
  const bool gpu = (*module)->device_count() > 0;
  if (choice == dpt::DeviceChoice::cuda && !gpu)
    return dp::make_error(dp::Errc::unavailable,
                          "--device cuda: no usable CUDA device here; use --device cpu");
  return gpu;
}

// The device is the one dp::Context names (the communicator's choice too).
dp::Result<std::unique_ptr<dpt::Ops>> make_ops(bool cuda, const dpt::Options& opts,
                                               const dp::Context& ctx, dp::Communicator& comm) {
  if (cuda) {
    if (comm.size() > 1 && comm.backend() != dp::Backend::nccl)
      return dp::make_error(
          dp::Errc::unavailable,
          "--device cuda: gradients live in GPU memory and need the nccl backend (got " +
              std::string(dp::backend_name(comm.backend())) +
              "); set DP_BACKEND=nccl or use --device cpu");
    auto module = dpt::cuda_module();
    if (!module) return module.error();
    auto device = ctx.cuda_device((*module)->device_count());
    if (!device) return device.error();
    dp::Error error;
    dpt::Ops* ops = (*module)->make_ops(*device, opts.precision, &error);
    if (ops == nullptr) return error;
    return std::unique_ptr<dpt::Ops>(ops);
  }
  if (opts.precision != dpt::Precision::fp32)
    return dp::make_error(
        dp::Errc::invalid_argument,
        "--precision: the CPU computes in fp32; drop the option or train on a GPU");
  return dpt::make_cpu_ops();
}

// slurm-dp's restart count (DP_RESTART_COUNT): > 0 when the step's programs
// were started again after a lost node or a failed program.
bool restarted() {
  const char* v = std::getenv(dp::env::kRestartCount);
  auto n = v ? dp::parse_whole_number(v, 0, 1'000'000) : dp::Result<long long>(0LL);
  return n && *n > 0;
}

// Ranks sharing a node split its cores; oversubscribed BLAS threads cost
// 2-3x (NOTES). A task Slurm bound to some CPUs already has its share.
void set_blas_threads(const dpt::Options& opts, const dp::Context& ctx) {
  if (opts.threads > 0) {
    dpt::set_cpu_threads(opts.threads);
    return;
  }
  if (std::getenv("OPENBLAS_NUM_THREADS")) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  const int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : cores;
  dpt::set_cpu_threads(mine < cores ? std::max(1, mine)
                                    : std::max(1, cores / ctx.local_world_size));
}

dp::Result<void> load_data(const dpt::Options& opts, dpt::TrainConfig& cfg, dpt::Dataset& train_set,
                           dpt::Dataset& test_set) {
  if (cfg.task == dpt::Task::fashion) {
    auto data = dpt::load_fashion_mnist(opts.data_dir, opts.train_limit);
    if (!data) return data.error();
    train_set = std::move(data->train);
    test_set = std::move(data->test);
    cfg.model.input = train_set.shape;
    cfg.model.outputs = train_set.classes;
  } else {
    train_set = dpt::make_regression(opts.regression_samples, cfg.seed);
    test_set = dpt::make_regression(1024, cfg.seed + 1);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  auto opts = dpt::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!opts) return fail(-1, opts.error(), 2);
  if (opts->help) {
    std::fputs(dpt::usage(), stdout);
    return 0;
  }
  dpt::install_stop_handlers();
  auto ctx = dp::Context::from_environment();
  if (!ctx) return fail(-1, ctx.error(), 1);
  set_blas_threads(*opts, *ctx);
  auto cuda = wants_cuda(opts->device);
  if (!cuda) return fail(-1, cuda.error(), 1);

  dp::InitOptions init;
  if (!*cuda && ctx->world_size > 1) init.backend = dp::Backend::gloo;
  auto comm = dp::init(*ctx, init);
  if (!comm) return fail(-1, comm.error(), 1);
  dp::Communicator& c = **comm;
  dpt::TrainConfig cfg = opts->train;
  // A step that restarts in place (--dp-spares, --dp-max-restarts) started
  // this program again: it goes on from its checkpoint, as --resume does.
  if (restarted() && !cfg.checkpoint.empty()) cfg.resume = true;
  if (opts->global_batch > 0) {
    if (opts->global_batch % c.size() != 0)
      return fail(c.rank(),
                  dp::make_error(dp::Errc::invalid_argument,
                                 "--global-batch " + std::to_string(opts->global_batch) +
                                     ": not divisible by the world size " +
                                     std::to_string(c.size()) + "; pick a multiple of it"),
                  2);
    cfg.batch = opts->global_batch / c.size();
  }

  auto ops = make_ops(*cuda, *opts, *ctx, c);
  if (!ops) return fail(c.rank(), ops.error(), 1);

  dpt::Dataset train_set, test_set;
  if (auto loaded = load_data(*opts, cfg, train_set, test_set); !loaded)
    return fail(c.rank(), loaded.error(), 1);

  auto result = dpt::train(c, **ops, cfg, train_set, &test_set);
  if (!result) return fail(c.rank(), result.error(), 1);
  if (cfg.task == dpt::Task::regression && c.rank() == 0 && !cfg.quiet)
    std::printf("learned y = %.4f x + %.4f (true: y = 0.7 x + 0.3)\n", result->params[0],
                result->params[1]);
  return 0;
}
