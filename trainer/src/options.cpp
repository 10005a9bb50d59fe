#include "options.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <type_traits>

#include "dp/params.hpp"

namespace dpt {
namespace {

dp::Error bad(const std::string& opt, const std::string& value, const std::string& fix) {
  return dp::make_error(dp::Errc::invalid_argument,
                        opt + ": invalid value '" + value + "': " + fix + " (see dp-trainer --help)");
}

template <class T>
dp::Result<T> integer(const std::string& opt, const std::string& v, T lo, T hi) {
  auto n = [&] {
    if constexpr (std::is_signed_v<T>) return dp::parse_whole_number(v, lo, hi);
    else return dp::parse_whole_number_u64(v, lo, hi);
  }();
  if (!n) return bad(opt, v, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<T>(*n);
}

dp::Result<float> real(const std::string& opt, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d) || d < lo || d > hi)
    return bad(opt, v, "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<float>(d);
}

dp::Result<std::vector<int>> int_list(const std::string& opt, const std::string& v) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= v.size()) {
    const size_t comma = std::min(v.find(',', start), v.size());
    auto x = integer<int>(opt, v.substr(start, comma - start), 1, 65536);
    if (!x) return bad(opt, v, "expected comma-separated positive widths, e.g. 512,256");
    out.push_back(*x);
    start = comma + 1;
  }
  return out;
}

}  // namespace

const char* usage() {
  return R"(usage: dp-trainer [options]        (launch: srun --dp-world=auto dp-trainer ...)
Data-parallel training on Fashion-MNIST or a synthetic regression task.
  --task fashion|regression     what to learn (default fashion)
  --model mlp|cnn|linear        model (default mlp; linear for regression)
  --hidden W1,W2,...            MLP hidden widths (default 512,256)
  --channels C1,C2              CNN conv channels (default 16,32)
  --kernel K                    CNN kernel size, odd (default 5)
  --fc N                        CNN dense width (default 128)
  --optimizer sgd|adam          (default sgd, momentum 0.9)
  --lr X  --momentum X  --weight-decay X
  --warmup-steps N              linear learning-rate warm-up (default 0)
  --lr-decay constant|cosine    after warm-up (default constant)
  --batch N                     samples per rank per step (default 128)
  --global-batch N              or: samples per step over all ranks
  --epochs N  --max-steps N     training length (default 1 epoch)
  --seed N                      init and shuffle seed (default 1)
  --data-dir DIR                Fashion-MNIST IDX .gz files (default /usr/share/datasets/fashion-mnist)
  --train-limit N               use only the first N training samples
  --regression-samples N        size of the synthetic set (default 4096)
  --bucket-kb N                 all-reduce bucket size (default 1024)
  --log-every N                 progress line every N steps (default 100; 0: none)
  --checkpoint FILE             rank 0 writes training state here (atomically)
  --checkpoint-every N          ... every N steps (also on SIGTERM/SIGUSR1 and at the end)
  --resume                      continue from --checkpoint if it exists
  --metrics FILE                JSON lines: progress, per-rank and final figures
  --baseline S                  world-1 samples/s, prints scaling efficiency
  --no-eval                     skip the test-set evaluation
  --device auto|cpu|cuda        (default auto: cuda when a GPU is visible)
  --threads N                   BLAS threads per rank (default: cores / ranks on the node,
                                or OPENBLAS_NUM_THREADS when set)
)";
}

dp::Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  TrainConfig& t = o.train;
  bool model_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> dp::Result<std::string> {
      if (i + 1 >= args.size())
        return dp::make_error(dp::Errc::invalid_argument, a + ": missing value (see dp-trainer --help)");
      return args[++i];
    };
#define DPT_VALUE(var)            \
  auto var##_r = value();         \
  if (!var##_r) return var##_r.error(); \
  const std::string& var = *var##_r
#define DPT_SET(target, expr)     \
  do {                            \
    auto r_ = (expr);             \
    if (!r_) return r_.error();   \
    target = *r_;                 \
  } while (0)
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--task") {
      DPT_VALUE(v);
      if (v == "fashion") t.task = Task::fashion;
      else if (v == "regression") t.task = Task::regression;
      else return bad(a, v, "use fashion or regression");
    } else if (a == "--model") {
      DPT_VALUE(v);
      model_given = true;
      if (v == "mlp") t.model.kind = ModelKind::mlp;
      else if (v == "cnn") t.model.kind = ModelKind::cnn;
      else if (v == "linear") t.model.kind = ModelKind::linear;
      else return bad(a, v, "use mlp, cnn or linear");
    } else if (a == "--hidden") {
      DPT_VALUE(v);
      DPT_SET(t.model.hidden, int_list(a, v));
    } else if (a == "--channels") {
      DPT_VALUE(v);
      DPT_SET(t.model.channels, int_list(a, v));
      if (t.model.channels.size() != 2) return bad(a, v, "give exactly two channel counts, e.g. 16,32");
    } else if (a == "--kernel") {
      DPT_VALUE(v);
      DPT_SET(t.model.kernel, integer<int>(a, v, 1, 15));
      if (t.model.kernel % 2 == 0) return bad(a, v, "use an odd kernel size such as 3 or 5");
    } else if (a == "--fc") {
      DPT_VALUE(v);
      DPT_SET(t.model.fc, integer<int>(a, v, 1, 65536));
    } else if (a == "--optimizer") {
      DPT_VALUE(v);
      if (v == "sgd") t.optimizer.kind = OptimizerKind::sgd;
      else if (v == "adam") t.optimizer.kind = OptimizerKind::adam;
      else return bad(a, v, "use sgd or adam");
    } else if (a == "--lr") {
      DPT_VALUE(v);
      DPT_SET(t.optimizer.lr, real(a, v, 1e-9, 100));
    } else if (a == "--momentum") {
      DPT_VALUE(v);
      DPT_SET(t.optimizer.momentum, real(a, v, 0, 0.999999));
    } else if (a == "--weight-decay") {
      DPT_VALUE(v);
      DPT_SET(t.optimizer.weight_decay, real(a, v, 0, 1));
    } else if (a == "--warmup-steps") {
      DPT_VALUE(v);
      DPT_SET(t.optimizer.warmup_steps, integer<long>(a, v, 0, 1L << 40));
    } else if (a == "--lr-decay") {
      DPT_VALUE(v);
      if (v == "constant") t.optimizer.decay = DecayKind::constant;
      else if (v == "cosine") t.optimizer.decay = DecayKind::cosine;
      else return bad(a, v, "use constant or cosine");
    } else if (a == "--batch") {
      DPT_VALUE(v);
      DPT_SET(t.batch, integer<int>(a, v, 1, 1 << 20));
    } else if (a == "--global-batch") {
      DPT_VALUE(v);
      DPT_SET(o.global_batch, integer<int>(a, v, 1, 1 << 24));
    } else if (a == "--epochs") {
      DPT_VALUE(v);
      DPT_SET(t.epochs, integer<long>(a, v, 1, 1'000'000));
    } else if (a == "--max-steps") {
      DPT_VALUE(v);
      DPT_SET(t.max_steps, integer<long>(a, v, 1, 1L << 40));
    } else if (a == "--seed") {
      DPT_VALUE(v);
      DPT_SET(t.seed, integer<uint64_t>(a, v, 0, UINT64_MAX));
    } else if (a == "--data-dir") {
      DPT_VALUE(v);
      o.data_dir = v;
    } else if (a == "--train-limit") {
      DPT_VALUE(v);
      DPT_SET(o.train_limit, integer<size_t>(a, v, 1, size_t{1} << 31));
    } else if (a == "--regression-samples") {
      DPT_VALUE(v);
      DPT_SET(o.regression_samples, integer<size_t>(a, v, 1, size_t{1} << 28));
    } else if (a == "--bucket-kb") {
      DPT_VALUE(v);
      size_t kb = 0;
      DPT_SET(kb, integer<size_t>(a, v, 1, size_t{1} << 22));
      t.bucket_bytes = kb * 1024;
    } else if (a == "--log-every") {
      DPT_VALUE(v);
      DPT_SET(t.log_every, integer<long>(a, v, 0, 1L << 40));
    } else if (a == "--checkpoint") {
      DPT_VALUE(v);
      if (v.empty()) return bad(a, v, "give a file path");
      t.checkpoint = v;
    } else if (a == "--checkpoint-every") {
      DPT_VALUE(v);
      DPT_SET(t.checkpoint_every, integer<long>(a, v, 1, 1L << 40));
    } else if (a == "--resume") {
      t.resume = true;
    } else if (a == "--metrics") {
      DPT_VALUE(v);
      t.metrics = v;
    } else if (a == "--baseline") {
      DPT_VALUE(v);
      float b = 0;
      DPT_SET(b, real(a, v, 1e-6, 1e12));
      t.baseline_samples_per_sec = b;
    } else if (a == "--no-eval") {
      t.evaluate = false;
    } else if (a == "--device") {
      DPT_VALUE(v);
      if (v == "auto") o.device = DeviceChoice::automatic;
      else if (v == "cpu") o.device = DeviceChoice::cpu;
      else if (v == "cuda") o.device = DeviceChoice::cuda;
      else return bad(a, v, "use auto, cpu or cuda");
    } else if (a == "--threads") {
      DPT_VALUE(v);
      DPT_SET(o.threads, integer<int>(a, v, 1, 1024));
    } else {
      return dp::make_error(dp::Errc::invalid_argument,
                            "unknown option '" + a + "' (see dp-trainer --help)");
    }
#undef DPT_VALUE
#undef DPT_SET
  }
  if (t.task == Task::regression) {
    if (model_given && t.model.kind != ModelKind::linear)
      return bad("--model", t.model.kind == ModelKind::cnn ? "cnn" : "mlp",
                 "the regression task trains --model linear");
    t.model.kind = ModelKind::linear;
    t.model.input = Shape{1, 1, 1};
    t.model.outputs = 1;
  } else if (t.model.kind == ModelKind::linear && model_given) {
    // A linear classifier (softmax regression) on images is allowed.
  }
  if ((t.checkpoint_every > 0 || t.resume) && t.checkpoint.empty())
    return dp::make_error(dp::Errc::invalid_argument,
                          std::string(t.resume ? "--resume" : "--checkpoint-every") +
                              ": needs --checkpoint FILE (see dp-trainer --help)");
  return o;
}

}  // namespace dpt
