#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <set>
#include <type_traits>
#include <utility>

#include "dp/list_text.hpp"
#include "dp/params.hpp"

namespace dpt {
namespace {

constexpr long kMaxEpochs = 1'000'000;
// The regression task converges in steps, not epochs: 200 steps of the
// linear recipe reach y = 0.70 x + 0.30 to four decimals whatever the world
// size (a larger global batch only averages the same exact gradients), while
// one epoch of 4096 samples is 8 steps at world 4.
constexpr long kRegressionSteps = 200;

dp::Error bad(const std::string& opt, const std::string& value, const std::string& fix) {
  return dp::make_error(dp::Errc::invalid_argument, opt + ": invalid value '" + value +
                                                        "': " + fix + " (see dp-trainer --help)");
}

template <class T>
dp::Result<T> integer(const std::string& opt, const std::string& v, T lo, T hi) {
  auto n = [&] {
    if constexpr (std::is_signed_v<T>) return dp::parse_whole_number(v, lo, hi);
    else return dp::parse_whole_number_u64(v, lo, hi);
  }();
  if (!n)
    return bad(opt, v,
               "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<T>(*n);
}

dp::Result<float> real(const std::string& opt, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(d) || d < lo || d > hi)
    return bad(opt, v,
               "expected a number from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<float>(d);
}

dp::Result<std::vector<int>> int_list(const std::string& opt, const std::string& v) {
  const char* fix = "expected comma-separated positive widths, e.g. 512,256";
  if (v.empty()) return bad(opt, v, fix);
  std::vector<int> out;
  for (std::string_view item : dp::list_items(v)) {
    auto x = integer<int>(opt, std::string(item), 1, 65536);
    if (!x) return bad(opt, v, fix);
    out.push_back(*x);
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
  --optimizer sgd|adam          (default: the model's recipe, below)
  --lr X  --momentum X  --weight-decay X
  --warmup-steps N              linear learning-rate warm-up
  --lr-decay constant|cosine    after warm-up
  --batch N                     samples per rank per step (default 128)
  --global-batch N              or: samples per step over all ranks
  --epochs N  --max-steps N     training length (default 1 epoch)
  --seed N                      init and shuffle seed (default 1)
  --data-dir DIR                Fashion-MNIST IDX .gz files (default /usr/share/datasets/fashion-mnist)
  --train-limit N               use only the first N training samples
  --regression-samples N        size of the synthetic set (default 4096)
  --bucket-kb N                 all-reduce bucket size (default: one per layer on a GPU, 1024 on CPUs)
  --log-every N                 progress line every N steps (default 100; 0: none)
  --checkpoint FILE             rank 0 writes training state here (atomically)
  --checkpoint-every N          ... every N steps (also on SIGTERM/SIGUSR1 and at the end)
  --resume                      continue from --checkpoint if it exists (also without it
                                when slurm-dp started the program again: DP_RESTART_COUNT > 0)
  --metrics FILE                JSON lines: progress, per-rank and final figures
  --baseline S                  world-1 samples/s, prints scaling efficiency
  --no-eval                     skip the test-set evaluation
  --device auto|cpu|cuda        (default auto: cuda when a GPU is visible)
  --precision fp32|tf32|bf16    GEMM arithmetic on a GPU (default fp32; the CPU does fp32)
  --threads N                   BLAS threads per rank (default: cores / ranks on the node,
                                or OPENBLAS_NUM_THREADS when set)
Each model's defaults are its tested recipe; options given override them:
  mlp: sgd, lr 0.05, momentum 0.9, cosine decay, batch 128 per rank (linear: constant rate)
  cnn: adam, lr 0.002, 50 warm-up steps, cosine decay, global batch 128
  regression (linear): 200 steps at any world size (--epochs or --max-steps replace them)
)";
}

namespace {

// What an option does with its value ("" for flags). `given` records the
// options seen, so the model's recipe fills in only the others.
using Setter = dp::Result<void> (*)(Options&, const std::string& opt, const std::string& v);
struct OptionSpec {
  const char* name;
  bool takes_value;
  Setter set;
};

template <class T, class F>
dp::Result<void> assign(T& target, F&& parsed) {
  auto r = parsed;
  if (!r) return r.error();
  target = *r;
  return {};
}

template <class E>
dp::Result<void> choose(E& target, const std::string& opt, const std::string& v,
                        std::initializer_list<std::pair<const char*, E>> choices, const char* fix) {
  for (const auto& [name, value] : choices)
    if (v == name) {
      target = value;
      return {};
    }
  return bad(opt, v, fix);
}

const OptionSpec kOptions[] = {
    {"--help", false, [](Options& o, const std::string&, const std::string&) -> dp::Result<void> { o.help = true; return {}; }},
    {"--task", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.train.task, a, v, {{"fashion", Task::fashion}, {"regression", Task::regression}},
                     "use fashion or regression");
     }},
    {"--model", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.train.model.kind, a, v,
                     {{"mlp", ModelKind::mlp}, {"cnn", ModelKind::cnn}, {"linear", ModelKind::linear}},
                     "use mlp, cnn or linear");
     }},
    {"--hidden", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.model.hidden, int_list(a, v));
     }},
    {"--channels", true, [](Options& o, const std::string& a, const std::string& v) -> dp::Result<void> {
       DP_TRY(assign(o.train.model.channels, int_list(a, v)));
       if (o.train.model.channels.size() != 2) return bad(a, v, "give exactly two channel counts, e.g. 16,32");
       return {};
     }},
    {"--kernel", true, [](Options& o, const std::string& a, const std::string& v) -> dp::Result<void> {
       DP_TRY(assign(o.train.model.kernel, integer<int>(a, v, 1, 15)));
       if (o.train.model.kernel % 2 == 0) return bad(a, v, "use an odd kernel size such as 3 or 5");
       return {};
     }},
    {"--fc", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.model.fc, integer<int>(a, v, 1, 65536));
     }},
    {"--optimizer", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.train.optimizer.kind, a, v, {{"sgd", OptimizerKind::sgd}, {"adam", OptimizerKind::adam}},
                     "use sgd or adam");
     }},
    {"--lr", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.optimizer.lr, real(a, v, 1e-9, 100));
     }},
    {"--momentum", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.optimizer.momentum, real(a, v, 0, 0.999999));
     }},
    {"--weight-decay", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.optimizer.weight_decay, real(a, v, 0, 1));
     }},
    {"--warmup-steps", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.optimizer.warmup_steps, integer<long>(a, v, 0, 1L << 40));
     }},
    {"--lr-decay", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.train.optimizer.decay, a, v, {{"constant", DecayKind::constant}, {"cosine", DecayKind::cosine}},
                     "use constant or cosine");
     }},
    {"--batch", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.batch, integer<int>(a, v, 1, 1 << 20));
     }},
    {"--global-batch", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.global_batch, integer<int>(a, v, 1, 1 << 24));
     }},
    {"--epochs", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.epochs, integer<long>(a, v, 1, kMaxEpochs));
     }},
    {"--max-steps", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.max_steps, integer<long>(a, v, 1, 1L << 40));
     }},
    {"--seed", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.seed, integer<uint64_t>(a, v, 0, UINT64_MAX));
     }},
    {"--data-dir", true, [](Options& o, const std::string&, const std::string& v) -> dp::Result<void> {
       o.data_dir = v;
       return {};
     }},
    {"--train-limit", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train_limit, integer<size_t>(a, v, 1, size_t{1} << 31));
     }},
    {"--regression-samples", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.regression_samples, integer<size_t>(a, v, 1, size_t{1} << 28));
     }},
    {"--bucket-kb", true, [](Options& o, const std::string& a, const std::string& v) -> dp::Result<void> {
       DP_TRY(assign(o.train.bucket_bytes, integer<size_t>(a, v, 1, size_t{1} << 22)));
       o.train.bucket_bytes *= 1024;
       return {};
     }},
    {"--log-every", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.log_every, integer<long>(a, v, 0, 1L << 40));
     }},
    {"--checkpoint", true, [](Options& o, const std::string& a, const std::string& v) -> dp::Result<void> {
       if (v.empty()) return bad(a, v, "give a file path");
       o.train.checkpoint = v;
       return {};
     }},
    {"--checkpoint-every", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.train.checkpoint_every, integer<long>(a, v, 1, 1L << 40));
     }},
    {"--resume", false, [](Options& o, const std::string&, const std::string&) -> dp::Result<void> {
       o.train.resume = true;
       return {};
     }},
    {"--metrics", true, [](Options& o, const std::string&, const std::string& v) -> dp::Result<void> {
       o.train.metrics = v;
       return {};
     }},
    {"--baseline", true, [](Options& o, const std::string& a, const std::string& v) -> dp::Result<void> {
       float b = 0;
       DP_TRY(assign(b, real(a, v, 1e-6, 1e12)));
       o.train.baseline_samples_per_sec = b;
       return {};
     }},
    {"--no-eval", false, [](Options& o, const std::string&, const std::string&) -> dp::Result<void> {
       o.train.evaluate = false;
       return {};
     }},
    {"--device", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.device, a, v,
                     {{"auto", DeviceChoice::automatic}, {"cpu", DeviceChoice::cpu}, {"cuda", DeviceChoice::cuda}},
                     "use auto, cpu or cuda");
     }},
    {"--precision", true, [](Options& o, const std::string& a, const std::string& v) {
       return choose(o.precision, a, v, {{"fp32", Precision::fp32}, {"tf32", Precision::tf32}, {"bf16", Precision::bf16}},
                     "use fp32, tf32 or bf16");
     }},
    {"--threads", true, [](Options& o, const std::string& a, const std::string& v) {
       return assign(o.threads, integer<int>(a, v, 1, 1024));
     }},
};

const OptionSpec* find_option(const std::string& a) {
  const std::string name = a == "-h" ? "--help" : a;
  for (const auto& o : kOptions)
    if (name == o.name) return &o;
  return nullptr;
}

// Each model's defaults are the recipe its accuracy was measured with
// (trainer/README.md); only options the user did not give are filled in.
void apply_recipe(Options& o, const std::set<std::string>& given) {
  OptimizerSpec r;  // mlp: SGD, momentum 0.9, lr 0.05, cosine decay
  r.decay = DecayKind::cosine;
  if (o.train.model.kind == ModelKind::linear) r.decay = DecayKind::constant;
  if (o.train.model.kind == ModelKind::cnn) {
    r.kind = OptimizerKind::adam;
    r.lr = 0.002f;
    r.warmup_steps = 50;
    r.decay = DecayKind::cosine;
    if (!given.count("--batch") && !given.count("--global-batch")) o.global_batch = 128;
  }
  OptimizerSpec& t = o.train.optimizer;
  if (!given.count("--optimizer")) t.kind = r.kind;
  if (!given.count("--lr")) t.lr = r.lr;
  if (!given.count("--warmup-steps")) t.warmup_steps = r.warmup_steps;
  if (!given.count("--lr-decay")) t.decay = r.decay;
  if (o.train.task == Task::regression && !given.count("--epochs") && !given.count("--max-steps")) {
    o.train.max_steps = kRegressionSteps;
    o.train.epochs = kMaxEpochs;  // the steps decide
  }
}

// Rules between options, checked once all are read.
dp::Result<void> check_combinations(Options& o, const std::set<std::string>& given) {
  TrainConfig& t = o.train;
  if (t.task == Task::regression) {
    if (given.count("--model") && t.model.kind != ModelKind::linear)
      return bad("--model", t.model.kind == ModelKind::cnn ? "cnn" : "mlp",
                 "the regression task trains --model linear");
    t.model.kind = ModelKind::linear;
    t.model.input = Shape{1, 1, 1};
    t.model.outputs = 1;
  }
  if ((t.checkpoint_every > 0 || t.resume) && t.checkpoint.empty())
    return dp::make_error(dp::Errc::invalid_argument,
                          std::string(t.resume ? "--resume" : "--checkpoint-every") +
                              ": needs --checkpoint FILE (see dp-trainer --help)");
  if (o.device == DeviceChoice::cpu && o.precision != Precision::fp32)
    return bad("--precision", o.precision == Precision::tf32 ? "tf32" : "bf16",
               "the CPU computes in fp32; use it with --device cuda or auto");
  return {};
}

}  // namespace

dp::Result<Options> parse_options(const std::vector<std::string>& args) {
  Options o;
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const OptionSpec* spec = find_option(a);
    if (!spec)
      return dp::make_error(dp::Errc::invalid_argument,
                            "unknown option '" + a + "' (see dp-trainer --help)");
    std::string value;
    if (spec->takes_value) {
      if (i + 1 >= args.size())
        return dp::make_error(dp::Errc::invalid_argument,
                              a + ": missing value (see dp-trainer --help)");
      value = args[++i];
    }
    DP_TRY(spec->set(o, a, value));
    given.insert(spec->name);
  }
  DP_TRY(check_combinations(o, given));
  apply_recipe(o, given);
  return o;
}

}  // namespace dpt
