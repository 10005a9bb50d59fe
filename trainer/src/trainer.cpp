// The training loop and what surrounds it: resume, checkpoints, progress,
// evaluation and the final report. On a GPU every step stays on the device:
// the data set is uploaded once, batches are gathered there by index, the
// loss is written to device memory, and the host reads results one step late
// (Ops::copy_out/fetch) instead of waiting for each step.
#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>

#include "checkpoint.hpp"
#include "gradient_sync.hpp"
#include "report.hpp"
#include "sampler.hpp"
#include "small_collectives.hpp"
#include "stop_signal.hpp"

namespace dpt {
namespace {

using Clock = std::chrono::steady_clock;

// CPU time of every thread of this process (the communicator's worker too):
// unlike wall time, other load on shared cores does not inflate it.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Values averaged together with the last gradient bucket, after the gradients.
enum Extra : size_t { kStopFlag = 0, kLoss = 1, kExtraCount = 2 };

// Row numbers travel as floats (Ops::gather_rows): exact below 2^24.
constexpr size_t kMaxSamples = size_t{1} << 24;

// A data set where the ops can gather from it: used in place on the CPU,
// uploaded once to the GPU.
class DeviceData {
 public:
  dp::Result<void> load(Ops& ops, const Dataset& d) {
    if (d.count >= kMaxSamples)
      return dp::make_error(dp::Errc::limit,
                            "data set of " + std::to_string(d.count) +
                                " samples: at most 16777215 are supported; use --train-limit");
    if (ops.host_memory()) {
      x_ = d.x.data();
      y_ = d.y.data();
      return {};
    }
    xs_ = DeviceBuffer(ops, d.x.size());
    ys_ = DeviceBuffer(ops, d.y.size());
    if (!xs_.valid() || !ys_.valid())
      return dp::make_error(dp::Errc::limit,
                            std::string("out of ") + ops.name() + " memory for the data set (" +
                                std::to_string(d.x.size() * 4 >> 20) + " MiB); use --train-limit");
    ops.upload(xs_.data(), d.x.data(), d.x.size());
    ops.upload(ys_.data(), d.y.data(), d.y.size());
    x_ = xs_.data();
    y_ = ys_.data();
    return ops.status();
  }
  const float* x() const { return x_; }
  const float* y() const { return y_; }

 private:
  DeviceBuffer xs_, ys_;
  const float* x_ = nullptr;
  const float* y_ = nullptr;
};

// Uploads row numbers as floats for Ops::gather_rows.
void upload_indices(Ops& ops, DeviceBuffer& dst, const std::vector<uint32_t>& idx) {
  std::vector<float> f(idx.begin(), idx.end());
  ops.upload(dst.data(), f.data(), f.size());
}

std::string fingerprint(const TrainConfig& cfg, int world, size_t train_count) {
  const auto& o = cfg.optimizer;
  std::string s = "model=" + cfg.model.describe() +
                  " optimizer=" + (o.kind == OptimizerKind::sgd ? "sgd" : "adam") +
                  " lr=" + std::to_string(o.lr) + " momentum=" + std::to_string(o.momentum) +
                  " warmup=" + std::to_string(o.warmup_steps) +
                  " global_batch=" + std::to_string(static_cast<long>(cfg.batch) * world) +
                  " seed=" + std::to_string(cfg.seed) + " samples=" + std::to_string(train_count);
  if (o.decay == DecayKind::cosine) s += " cosine_epochs=" + std::to_string(cfg.epochs);
  return s;
}

struct Evaluation {
  double accuracy = -1, mse = -1;
};

// Rank r scores samples r, r+W, ...: every test sample exactly once.
dp::Result<Evaluation> evaluate(dp::Communicator& comm, Ops& ops, Model& model, const Dataset& test,
                                int max_batch, SmallCollectives& small) {
  DeviceData data;
  DP_TRY(data.load(ops, test));
  std::vector<uint32_t> mine;
  for (size_t i = static_cast<size_t>(comm.rank()); i < test.count;
       i += static_cast<size_t>(comm.size()))
    mine.push_back(static_cast<uint32_t>(i));
  DeviceBuffer idx(ops, std::max<size_t>(mine.size(), 1)), labels(ops, max_batch),
      scratch(ops, model.output_size() * max_batch + 1);
  upload_indices(ops, idx, mine);
  double correct = 0, sq = 0;
  for (size_t start = 0; start < mine.size(); start += max_batch) {
    const int n = static_cast<int>(std::min<size_t>(max_batch, mine.size() - start));
    ops.gather_rows(model.input(), data.x(), idx.data() + start, n, test.shape.size());
    ops.gather_rows(labels.data(), data.y(), idx.data() + start, n, 1);
    const float* out = model.forward(n);
    if (test.classes > 0) {
      correct += ops.count_correct(out, labels.data(), n, static_cast<int>(model.output_size()));
    } else {
      float* loss = scratch.data() + model.output_size() * max_batch;
      ops.mean_squared_error(out, labels.data(), n, scratch.data(), 0.0f, loss);
      float mean = 0;
      ops.download(&mean, loss, 1);
      sq += static_cast<double>(mean) * n;
    }
    DP_TRY(ops.status());
  }
  std::vector<float> totals{static_cast<float>(correct), static_cast<float>(sq),
                            static_cast<float>(mine.size())};
  DP_TRY(small.all_reduce_sum(totals));
  Evaluation e;
  if (test.classes > 0) e.accuracy = totals[0] / totals[2];
  else e.mse = totals[1] / totals[2];
  return e;
}

// One call of train(): the run's fixed facts, its state, and its phases.
class Training {
 public:
  Training(dp::Communicator& comm, Ops& ops, const TrainConfig& cfg, const Dataset& train_set)
      : comm_(comm),
        ops_(ops),
        cfg_(cfg),
        train_set_(train_set),
        world_(comm.size()),
        rank_(comm.rank()),
        talk_(rank_ == 0 && !cfg.quiet),
        sampler_(train_set.count, world_, rank_, cfg.seed),
        steps_per_epoch_(static_cast<int64_t>(sampler_.batches_per_epoch(cfg.batch))),
        // The schedule spans all epochs; --max-steps only stops early, so a run
        // cut short and resumed follows the same learning rates as an
        // uninterrupted one.
        schedule_steps_(steps_per_epoch_ * cfg.epochs),
        total_steps_(cfg.max_steps > 0 ? std::min<int64_t>(schedule_steps_, cfg.max_steps)
                                       : schedule_steps_),
        eval_batch_(std::max(cfg.batch, 256)) {}

  dp::Result<void> set_up();
  dp::Result<void> resume();
  void announce();
  dp::Result<void> run_loop();
  bool advance();  // one step on: true at an epoch's end
  dp::Result<void> finish(const Dataset* test_set);
  TrainSummary take_summary() { return std::move(sum_); }

 private:
  // What one step reads and writes at fixed addresses.
  struct StepBuffers {
    StepBuffers(Ops& ops, int batch, float* extras_at)
        : batch_idx(ops, batch), labels(ops, batch), extras(extras_at) {}
    DeviceBuffer batch_idx, labels;
    float* extras;
    enum class Graph { off, warm_up, record, replay } graph = Graph::off;
  };
  dp::Result<void> step(GradientSync& sync, const float* idx, StepBuffers& b);
  void log_progress();
  dp::Result<void> save();
  dp::Result<void> gather_throughput(double& slowest);
  void print_summary(double slowest) const;
  void write_final_metrics(double slowest);

  dp::Communicator& comm_;
  Ops& ops_;
  const TrainConfig& cfg_;
  const Dataset& train_set_;
  const int world_, rank_;
  const bool talk_;
  DistributedSampler sampler_;
  const int64_t steps_per_epoch_, schedule_steps_, total_steps_;
  const int eval_batch_;

  MetricsLog metrics_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> opt_;
  std::optional<SmallCollectives> small_;
  std::string fingerprint_;
  DeviceData data_;
  TrainPosition pos_;
  TrainSummary sum_;
  Clock::time_point t_log_;
  double cpu_log_ = 0;  // process_cpu_seconds() at t_log_
  int64_t steps_since_log_ = 0;
};

dp::Result<void> Training::set_up() {
  if (rank_ == 0) DP_TRY(metrics_.open(cfg_.metrics));
  if (steps_per_epoch_ == 0)
    return dp::make_error(dp::Errc::invalid_argument,
                          "--batch " + std::to_string(cfg_.batch) + ": larger than the " +
                              std::to_string(sampler_.samples_per_rank()) + " samples each of " +
                              std::to_string(world_) + " ranks gets; use a smaller --batch");
  auto model = Model::create(cfg_.model, ops_, eval_batch_, cfg_.seed, kExtraCount);
  if (!model) return model.error();
  model_ = std::move(*model);
  auto opt = Optimizer::create(cfg_.optimizer, ops_, model_->param_count());
  if (!opt) return opt.error();
  opt_ = std::move(*opt);
  small_.emplace(comm_, ops_);
  fingerprint_ = fingerprint(cfg_, world_, train_set_.count);
  // Collectives on device buffers wait for the kernels that wrote them.
  DP_TRY(comm_.set_stream(ops_.stream()));
  DP_TRY(data_.load(ops_, train_set_));
  return ops_.status();
}

// Every rank reads the file (checkpoints live on the job's shared
// filesystem, as Slurm's requeue assumes); then all ranks check they agree.
dp::Result<void> Training::resume() {
  if (!cfg_.resume || cfg_.checkpoint.empty()) return {};
  auto ck = read_checkpoint(cfg_.checkpoint);
  if (ck) {
    if (ck->fingerprint != fingerprint_)
      return dp::make_error(dp::Errc::invalid_argument,
                            "--resume: " + cfg_.checkpoint + " was written by a different run (" +
                                ck->fingerprint + "; this run: " + fingerprint_ +
                                "); use the same options or another --checkpoint");
    auto state = opt_->state();
    const size_t n = model_->param_count();
    if (ck->params.size() != n || ck->optimizer_state.size() != state.size())
      return dp::make_error(dp::Errc::invalid_argument,
                            "--resume: " + cfg_.checkpoint + " does not match the model's size");
    ops_.upload(model_->params(), ck->params.data(), n);
    for (size_t i = 0; i < state.size(); ++i) {
      if (ck->optimizer_state[i].size() != n)
        return dp::make_error(dp::Errc::invalid_argument,
                              "--resume: optimizer state size mismatch");
      ops_.upload(state[i]->data(), ck->optimizer_state[i].data(), n);
    }
    pos_ = ck->position;
    opt_->set_steps_taken(pos_.global_step);
  } else if (ck.error().code != dp::Errc::not_found) {
    return ck.error();
  }
  std::vector<float> check{static_cast<float>(pos_.global_step), 1.0f};
  DP_TRY(small_->all_reduce_sum(check));
  if (check[0] != static_cast<float>(pos_.global_step) * static_cast<float>(world_))
    return dp::make_error(dp::Errc::invalid_argument,
                          "--resume: ranks found different checkpoints at " + cfg_.checkpoint +
                              "; put --checkpoint on a filesystem every node shares");
  if (talk_)
    std::printf("resume: %s at step %lld (epoch %lld, batch %lld)\n",
                ck ? "continuing" : "no checkpoint yet, starting",
                static_cast<long long>(pos_.global_step), static_cast<long long>(pos_.epoch + 1),
                static_cast<long long>(pos_.batch_in_epoch));
  return {};
}

void Training::announce() {
  if (talk_) {
    std::printf(
        "dp-trainer: %s on %s, world %d, %s, batch %d per rank (global %d), %lld steps/epoch\n",
        model_->describe().c_str(), ops_.name(), world_, comm_.describe().c_str(), cfg_.batch,
        cfg_.batch * world_, static_cast<long long>(steps_per_epoch_));
    std::fflush(stdout);
  }
  metrics_.write(Json()
                     .add("event", "start")
                     .add("model", model_->describe())
                     .add("world", world_)
                     .add("communicator", comm_.describe())
                     .add("batch_per_rank", cfg_.batch)
                     .add("steps_per_epoch", static_cast<long long>(steps_per_epoch_))
                     .add("start_step", static_cast<long long>(pos_.global_step)));
}

dp::Result<void> Training::save() {
  if (rank_ != 0 || cfg_.checkpoint.empty()) return {};
  CheckpointData d;
  d.fingerprint = fingerprint_;
  d.position = pos_;
  d.params.resize(model_->param_count());
  ops_.download(d.params.data(), model_->params(), model_->param_count());
  for (DeviceBuffer* s : opt_->state()) {
    d.optimizer_state.emplace_back(model_->param_count());
    ops_.download(d.optimizer_state.back().data(), s->data(), model_->param_count());
  }
  DP_TRY(ops_.status());
  return write_checkpoint(cfg_.checkpoint, d);
}

// Queues one step; waits only for the gradient all-reduces (world > 1).
// The part between the batch's indices and the gradients is the same work
// on the same buffers every step: on a GPU at world 1 it is recorded once as
// a graph (step 2; step 1 sizes every buffer) and replayed.
dp::Result<void> Training::step(GradientSync& sync, const float* idx, StepBuffers& b) {
  const int B = cfg_.batch;
  Model& model = *model_;
  ops_.copy(b.batch_idx.data(), idx, B);
  ops_.fill(b.extras + kStopFlag, stop_requested() ? 1.0f : 0.0f, 1);
  sync.begin_step();
  auto body = [&] {
    ops_.gather_rows(model.input(), data_.x(), b.batch_idx.data(), B, train_set_.shape.size());
    ops_.gather_rows(b.labels.data(), data_.y(), b.batch_idx.data(), B, 1);
    const float* out = model.forward(B);
    // Mean over the local batch; averaging over ranks makes it the global mean.
    if (train_set_.classes > 0)
      ops_.softmax_cross_entropy(out, b.labels.data(), B, static_cast<int>(model.output_size()),
                                 model.output_grad(), 1.0f / B, b.extras + kLoss);
    else
      ops_.mean_squared_error(out, b.labels.data(), B, model.output_grad(), 1.0f / B,
                              b.extras + kLoss);
    model.backward(B, [&](size_t layer) { sync.on_layer_done(layer); });
  };
  if (b.graph == StepBuffers::Graph::replay) {
    ops_.replay();
  } else if (b.graph == StepBuffers::Graph::record && ops_.capture(body)) {
    b.graph = StepBuffers::Graph::replay;
  } else {
    body();
    b.graph = b.graph == StepBuffers::Graph::warm_up ? StepBuffers::Graph::record
                                                     : StepBuffers::Graph::off;
  }
  const auto t_wait = Clock::now();
  DP_TRY(sync.finish());
  sum_.comm_wait_seconds += seconds_since(t_wait);
  opt_->step(model.params(), model.grads(),
             learning_rate(cfg_.optimizer, pos_.global_step, schedule_steps_));
  return {};
}

void Training::log_progress() {
  const int64_t B = cfg_.batch;
  const double dt = seconds_since(t_log_);
  const double rate = static_cast<double>(steps_since_log_) * B * world_ / std::max(dt, 1e-9);
  const long long ep = pos_.batch_in_epoch == 0 ? pos_.epoch : pos_.epoch + 1;
  if (talk_) {
    std::printf("epoch %lld step %lld/%lld loss %.4f lr %.5f samples/s %.0f\n", ep,
                static_cast<long long>(pos_.global_step), static_cast<long long>(total_steps_),
                sum_.last_loss,
                learning_rate(cfg_.optimizer, pos_.global_step - 1, schedule_steps_), rate);
    std::fflush(stdout);
  }
  // This rank's samples per CPU-second: the work a step costs, which noisy
  // neighbours on the cores do not change (bench/trainer's overhead pairs).
  const double cpu = std::max(process_cpu_seconds() - cpu_log_, 1e-9);
  metrics_.write(
      Json()
          .add("event", "progress")
          .add("epoch", ep)
          .add("step", static_cast<long long>(pos_.global_step))
          .add("loss", static_cast<double>(sum_.last_loss))
          .add("samples_per_sec", rate)
          .add("rank_samples_per_cpu_sec", static_cast<double>(steps_since_log_) * B / cpu));
  t_log_ = Clock::now();
  cpu_log_ = process_cpu_seconds();
  steps_since_log_ = 0;
}

bool Training::advance() {
  ++pos_.global_step;
  ++sum_.steps_this_run;
  ++steps_since_log_;
  if (++pos_.batch_in_epoch != steps_per_epoch_) return false;
  pos_.batch_in_epoch = 0;
  ++pos_.epoch;
  return true;
}

// On a GPU the stop flag is read one step late (the GPU need not finish a
// step before the next is queued); every rank reads the same averaged flag,
// so all stop after the same step.
dp::Result<void> Training::run_loop() {
  const int B = cfg_.batch;
  // Default buckets: one per layer on a GPU, so each layer's all-reduce
  // overlaps the backward pass of the layers below it; 1 MiB on CPUs, where
  // each collective costs a round of TCP messages.
  const size_t bucket = cfg_.bucket_bytes > 0 ? cfg_.bucket_bytes
                        : ops_.host_memory()  ? size_t{1} << 20
                                              : 1;
  GradientSync sync(comm_, *model_, bucket, kExtraCount);
  DeviceBuffer order_dev(ops_, std::max<size_t>(sampler_.samples_per_rank(), 1));
  std::vector<uint32_t> order;
  float* extras = model_->grads() + model_->param_count();
  StepBuffers buffers(ops_, B, extras);
  // Graphs only without peers: collectives stay outside any recording.
  if (!ops_.host_memory() && world_ == 1) buffers.graph = StepBuffers::Graph::warm_up;
  std::optional<uint64_t> previous;
  const auto t0 = Clock::now();
  t_log_ = t0;
  cpu_log_ = process_cpu_seconds();
  bool done = pos_.global_step >= total_steps_;
  while (!done && pos_.epoch < cfg_.epochs) {
    sampler_.indices(pos_.epoch, order);
    upload_indices(ops_, order_dev, order);
    while (!done) {
      DP_TRY(step(sync, order_dev.data() + pos_.batch_in_epoch * B, buffers));
      const uint64_t ticket = ops_.copy_out(extras, kExtraCount);
      const bool epoch_end = advance();
      // CPU results are there at once; a GPU's are read a step late.
      if (ops_.host_memory()) previous = ticket;
      if (previous && ops_.fetch(*previous)[kStopFlag] > 0.0f) done = sum_.stopped_by_signal = true;
      previous = ticket;
      DP_TRY(ops_.status());
      if (cfg_.log_every > 0 && pos_.global_step % cfg_.log_every == 0) {
        sum_.last_loss = ops_.fetch(ticket)[kLoss];
        log_progress();
      }
      if (!done && cfg_.checkpoint_every > 0 && pos_.global_step % cfg_.checkpoint_every == 0)
        DP_TRY(save());
      done = done || pos_.global_step >= total_steps_;
      if (epoch_end) break;  // next epoch: new permutation
    }
  }
  if (previous) {
    const float* last = ops_.fetch(*previous);
    sum_.last_loss = last[kLoss];
    if (last[kStopFlag] > 0.0f) sum_.stopped_by_signal = true;
  }
  ops_.synchronize();
  DP_TRY(ops_.status());
  sum_.train_seconds = seconds_since(t0);
  sum_.steps = pos_.global_step;
  if (sum_.stopped_by_signal) sum_.signal = stop_signal();
  return {};
}

// Throughput: per rank, and aggregate = all samples / slowest rank's time.
dp::Result<void> Training::gather_throughput(double& slowest) {
  auto all = small_->all_gather({static_cast<float>(sum_.steps_this_run * cfg_.batch),
                                 static_cast<float>(sum_.train_seconds)});
  if (!all) return all.error();
  double total = 0;
  slowest = 0;
  for (int r = 0; r < world_; ++r) {
    RankThroughput t{(*all)[2 * r], (*all)[2 * r + 1]};
    sum_.ranks.push_back(t);
    slowest = std::max<double>(slowest, t.seconds);
    total += t.samples;
  }
  sum_.aggregate_samples_per_sec = slowest > 0 ? total / slowest : 0;
  return {};
}

void Training::print_summary(double slowest) const {
  if (!talk_) return;
  for (int r = 0; r < world_; ++r)
    std::printf("rank %d: %.0f samples in %.2f s, %.0f samples/s\n", r, sum_.ranks[r].samples,
                sum_.ranks[r].seconds,
                sum_.ranks[r].samples / std::max(sum_.ranks[r].seconds, 1e-9f));
  std::printf(
      "aggregate: %.0f samples/s over %d ranks, %lld steps, %.2f s (rank 0 waited %.2f s for "
      "all-reduces), final loss %.4f\n",
      sum_.aggregate_samples_per_sec, world_, static_cast<long long>(sum_.steps_this_run), slowest,
      sum_.comm_wait_seconds, sum_.last_loss);
  if (cfg_.baseline_samples_per_sec > 0)
    std::printf("scaling efficiency: %.1f%% of %d x %.0f samples/s (world-1 baseline)\n",
                100.0 * sum_.aggregate_samples_per_sec / (world_ * cfg_.baseline_samples_per_sec),
                world_, cfg_.baseline_samples_per_sec);
  if (sum_.test_accuracy >= 0) std::printf("test accuracy: %.4f\n", sum_.test_accuracy);
  if (sum_.test_mse >= 0) std::printf("test mse: %.3g\n", sum_.test_mse);
  std::fflush(stdout);
}

void Training::write_final_metrics(double slowest) {
  if (rank_ != 0) return;
  for (int r = 0; r < world_; ++r)
    metrics_.write(Json()
                       .add("event", "rank")
                       .add("rank", r)
                       .add("samples", static_cast<double>(sum_.ranks[r].samples))
                       .add("seconds", static_cast<double>(sum_.ranks[r].seconds))
                       .add("samples_per_sec",
                            sum_.ranks[r].samples / std::max(sum_.ranks[r].seconds, 1e-9f)));
  Json fin;
  fin.add("event", "final")
      .add("world", world_)
      .add("steps", static_cast<long long>(sum_.steps))
      .add("loss", static_cast<double>(sum_.last_loss))
      .add("seconds", slowest)
      .add("rank0_comm_wait_seconds", sum_.comm_wait_seconds)
      .add("aggregate_samples_per_sec", sum_.aggregate_samples_per_sec)
      .add("stopped_by_signal", sum_.stopped_by_signal);
  if (cfg_.baseline_samples_per_sec > 0)
    fin.add("scaling_efficiency",
            sum_.aggregate_samples_per_sec / (world_ * cfg_.baseline_samples_per_sec));
  if (sum_.test_accuracy >= 0) fin.add("test_accuracy", sum_.test_accuracy);
  if (sum_.test_mse >= 0) fin.add("test_mse", sum_.test_mse);
  metrics_.write(fin);
}

// Checkpoint, report, evaluate, and hand back the final parameters.
dp::Result<void> Training::finish(const Dataset* test_set) {
  DP_TRY(save());
  if (sum_.stopped_by_signal) {
    if (talk_)
      std::printf("dp-trainer: stopping on signal %d at step %lld%s\n", sum_.signal,
                  static_cast<long long>(pos_.global_step),
                  cfg_.checkpoint.empty() ? " (no --checkpoint: progress is lost)"
                                          : ", checkpoint written");
    metrics_.write(Json()
                       .add("event", "stopped")
                       .add("step", static_cast<long long>(pos_.global_step))
                       .add("signal", sum_.signal));
  }
  double slowest = 0;
  DP_TRY(gather_throughput(slowest));
  if (cfg_.evaluate && test_set && !sum_.stopped_by_signal) {
    auto ev = evaluate(comm_, ops_, *model_, *test_set, eval_batch_, *small_);
    if (!ev) return ev.error();
    sum_.test_accuracy = ev->accuracy;
    sum_.test_mse = ev->mse;
  }
  print_summary(slowest);
  write_final_metrics(slowest);
  sum_.params.resize(model_->param_count());
  ops_.download(sum_.params.data(), model_->params(), model_->param_count());
  return ops_.status();
}

}  // namespace

dp::Result<TrainSummary> train(dp::Communicator& comm, Ops& ops, const TrainConfig& cfg,
                               const Dataset& train_set, const Dataset* test_set) {
  Training t(comm, ops, cfg, train_set);
  DP_TRY(t.set_up());
  DP_TRY(t.resume());
  t.announce();
  DP_TRY(t.run_loop());
  DP_TRY(t.finish(test_set));
  return t.take_summary();
}

}  // namespace dpt
