#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "checkpoint.hpp"
#include "gradient_sync.hpp"
#include "report.hpp"
#include "sampler.hpp"
#include "stop_signal.hpp"

namespace dpt {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Values averaged together with the last gradient bucket, after the gradients.
enum Extra : size_t { kStopFlag = 0, kLoss = 1, kExtraCount = 2 };

// Small collectives on host vectors through a device scratch buffer, so they
// work with device-memory backends (NCCL) too.
class SmallCollectives {
 public:
  SmallCollectives(dp::Communicator& comm, Ops& ops)
      : comm_(comm), ops_(ops), buf_(ops, 64 * static_cast<size_t>(comm.size())) {}
  dp::Result<void> all_reduce_sum(std::vector<float>& v) {
    ops_.upload(buf_.data(), v.data(), v.size());
    if (comm_.size() > 1) DP_TRY(comm_.all_reduce(buf_.data(), v.size(), dp::DType::f32, dp::ReduceOp::sum));
    ops_.download(v.data(), buf_.data(), v.size());
    return {};
  }
  dp::Result<std::vector<float>> all_gather(const std::vector<float>& mine) {
    const size_t n = mine.size(), w = static_cast<size_t>(comm_.size());
    std::vector<float> all(n * w);
    ops_.upload(buf_.data(), mine.data(), n);
    if (w > 1) {
      DP_TRY(comm_.all_gather(buf_.data(), buf_.data() + 32, n, dp::DType::f32));
      ops_.download(all.data(), buf_.data() + 32, n * w);
    } else {
      ops_.download(all.data(), buf_.data(), n);
    }
    return all;
  }

 private:
  dp::Communicator& comm_;
  Ops& ops_;
  DeviceBuffer buf_;
};

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

dp::Result<Evaluation> evaluate(dp::Communicator& comm, Ops& ops, Model& model, const Dataset& test,
                                int max_batch, SmallCollectives& small) {
  const size_t per = test.shape.size();
  const size_t world = static_cast<size_t>(comm.size()), rank = static_cast<size_t>(comm.rank());
  std::vector<float> xs(per * max_batch), ys(max_batch);
  DeviceBuffer labels(ops, max_batch), scratch(ops, model.output_size() * max_batch);
  double correct = 0, sq = 0, count = 0;
  // Rank r scores samples r, r+W, ...: every test sample exactly once.
  for (size_t start = rank; start < test.count;) {
    int n = 0;
    for (; n < max_batch && start < test.count; ++n, start += world) {
      std::memcpy(xs.data() + n * per, test.x.data() + start * per, per * sizeof(float));
      ys[n] = test.y[start];
    }
    ops.upload(model.input(), xs.data(), per * n);
    ops.upload(labels.data(), ys.data(), n);
    const float* out = model.forward(n);
    if (test.classes > 0) {
      correct += ops.count_correct(out, labels.data(), n, static_cast<int>(model.output_size()));
    } else {
      sq += ops.mean_squared_error(out, labels.data(), n, scratch.data(), 0.0f) * n;
    }
    count += n;
  }
  std::vector<float> totals{static_cast<float>(correct), static_cast<float>(sq), static_cast<float>(count)};
  DP_TRY(small.all_reduce_sum(totals));
  Evaluation e;
  if (test.classes > 0) e.accuracy = totals[0] / totals[2];
  else e.mse = totals[1] / totals[2];
  return e;
}

}  // namespace

dp::Result<TrainSummary> train(dp::Communicator& comm, Ops& ops, const TrainConfig& cfg,
                               const Dataset& train_set, const Dataset* test_set) {
  const int world = comm.size(), rank = comm.rank();
  const bool leader = rank == 0;
  const bool talk = leader && !cfg.quiet;
  MetricsLog metrics;
  if (leader) DP_TRY(metrics.open(cfg.metrics));

  const int B = cfg.batch;
  DistributedSampler sampler(train_set.count, world, rank, cfg.seed);
  const int64_t steps_per_epoch = static_cast<int64_t>(sampler.batches_per_epoch(B));
  if (steps_per_epoch == 0)
    return dp::make_error(dp::Errc::invalid_argument,
                          "--batch " + std::to_string(B) + ": larger than the " +
                              std::to_string(sampler.samples_per_rank()) + " samples each of " +
                              std::to_string(world) + " ranks gets; use a smaller --batch");
  // The schedule spans all epochs; --max-steps only stops early, so a run cut
  // short and resumed follows the same learning rates as an uninterrupted one.
  const int64_t schedule_steps = steps_per_epoch * cfg.epochs;
  const int64_t total_steps =
      cfg.max_steps > 0 ? std::min<int64_t>(schedule_steps, cfg.max_steps) : schedule_steps;

  const int eval_batch = std::max(B, 256);
  auto model_r = Model::create(cfg.model, ops, eval_batch, cfg.seed, kExtraCount);
  if (!model_r) return model_r.error();
  Model& model = **model_r;
  auto opt_r = Optimizer::create(cfg.optimizer, ops, model.param_count());
  if (!opt_r) return opt_r.error();
  Optimizer& opt = **opt_r;
  SmallCollectives small(comm, ops);
  const std::string fp = fingerprint(cfg, world, train_set.count);

  TrainPosition pos;
  if (cfg.resume && !cfg.checkpoint.empty()) {
    // Every rank reads the file (checkpoints live on the job's shared
    // filesystem, as Slurm's requeue assumes); then all ranks check they agree.
    auto ck = read_checkpoint(cfg.checkpoint);
    if (ck) {
      if (ck->fingerprint != fp)
        return dp::make_error(dp::Errc::invalid_argument,
                              "--resume: " + cfg.checkpoint + " was written by a different run (" +
                                  ck->fingerprint + "; this run: " + fp +
                                  "); use the same options or another --checkpoint");
      auto state = opt.state();
      if (ck->params.size() != model.param_count() || ck->optimizer_state.size() != state.size())
        return dp::make_error(dp::Errc::invalid_argument, "--resume: " + cfg.checkpoint +
                                                              " does not match the model's size");
      ops.upload(model.params(), ck->params.data(), ck->params.size());
      for (size_t i = 0; i < state.size(); ++i) {
        if (ck->optimizer_state[i].size() != model.param_count())
          return dp::make_error(dp::Errc::invalid_argument, "--resume: optimizer state size mismatch");
        ops.upload(state[i]->data(), ck->optimizer_state[i].data(), model.param_count());
      }
      pos = ck->position;
      opt.set_steps_taken(pos.global_step);
    } else if (ck.error().code != dp::Errc::not_found) {
      return ck.error();
    }
    std::vector<float> check{static_cast<float>(pos.global_step), 1.0f};
    DP_TRY(small.all_reduce_sum(check));
    if (check[0] != static_cast<float>(pos.global_step) * static_cast<float>(world))
      return dp::make_error(dp::Errc::invalid_argument,
                            "--resume: ranks found different checkpoints at " + cfg.checkpoint +
                                "; put --checkpoint on a filesystem every node shares");
    if (talk)
      std::printf("resume: %s at step %lld (epoch %lld, batch %lld)\n",
                  ck ? "continuing" : "no checkpoint yet, starting", static_cast<long long>(pos.global_step),
                  static_cast<long long>(pos.epoch + 1), static_cast<long long>(pos.batch_in_epoch));
  }

  auto save = [&](const TrainPosition& p) -> dp::Result<void> {
    if (!leader || cfg.checkpoint.empty()) return {};
    CheckpointData d;
    d.fingerprint = fp;
    d.position = p;
    d.params.resize(model.param_count());
    ops.download(d.params.data(), model.params(), model.param_count());
    for (DeviceBuffer* s : opt.state()) {
      d.optimizer_state.emplace_back(model.param_count());
      ops.download(d.optimizer_state.back().data(), s->data(), model.param_count());
    }
    return write_checkpoint(cfg.checkpoint, d);
  };

  if (talk) {
    std::printf("dp-trainer: %s on %s, world %d, %s, batch %d per rank (global %d), %lld steps/epoch\n",
                model.describe().c_str(), ops.name(), world, comm.describe().c_str(), B, B * world,
                static_cast<long long>(steps_per_epoch));
    std::fflush(stdout);
  }
  metrics.write(Json()
                    .add("event", "start")
                    .add("model", model.describe())
                    .add("world", world)
                    .add("communicator", comm.describe())
                    .add("batch_per_rank", B)
                    .add("steps_per_epoch", static_cast<long long>(steps_per_epoch))
                    .add("start_step", static_cast<long long>(pos.global_step)));

  GradientSync sync(comm, model, cfg.bucket_bytes, kExtraCount);
  const size_t per = train_set.shape.size();
  const bool direct = ops.host_memory();
  std::vector<float> stage_x(direct ? 0 : per * B), stage_y(B);
  DeviceBuffer labels(ops, B);
  std::vector<uint32_t> order;
  float* extras = model.grads() + model.param_count();
  const int outputs = static_cast<int>(model.output_size());

  TrainSummary sum;
  const auto t0 = Clock::now();
  auto t_log = t0;
  int64_t steps_since_log = 0;
  bool done = pos.global_step >= total_steps;
  float host_extras[kExtraCount] = {0, 0};
  while (!done && pos.epoch < cfg.epochs) {
    sampler.indices(pos.epoch, order);
    for (; pos.batch_in_epoch < steps_per_epoch; ) {
      const uint32_t* idx = order.data() + pos.batch_in_epoch * B;
      float* xdst = direct ? model.input() : stage_x.data();
      for (int j = 0; j < B; ++j) {
        std::memcpy(xdst + j * per, train_set.x.data() + idx[j] * per, per * sizeof(float));
        stage_y[j] = train_set.y[idx[j]];
      }
      if (!direct) ops.upload(model.input(), stage_x.data(), per * B);
      ops.upload(labels.data(), stage_y.data(), B);

      const float* out = model.forward(B);
      // Mean over the local batch; averaging over ranks makes it the global mean.
      const float loss = train_set.classes > 0
                             ? ops.softmax_cross_entropy(out, labels.data(), B, outputs, model.output_grad(), 1.0f / B)
                             : ops.mean_squared_error(out, labels.data(), B, model.output_grad(), 1.0f / B);
      host_extras[kStopFlag] = stop_requested() ? 1.0f : 0.0f;
      host_extras[kLoss] = loss;
      ops.upload(extras, host_extras, kExtraCount);
      sync.begin_step();
      model.backward(B, [&](size_t layer) { sync.on_layer_done(layer); });
      const auto t_wait = Clock::now();
      DP_TRY(sync.finish());
      sum.comm_wait_seconds += seconds_since(t_wait);
      ops.download(host_extras, extras, kExtraCount);

      opt.step(model.params(), model.grads(), learning_rate(cfg.optimizer, pos.global_step, schedule_steps));
      ++pos.global_step;
      ++sum.steps_this_run;
      ++steps_since_log;
      if (++pos.batch_in_epoch == steps_per_epoch) {
        pos.batch_in_epoch = 0;
        ++pos.epoch;
      }
      sum.last_loss = host_extras[kLoss];

      if (cfg.log_every > 0 && pos.global_step % cfg.log_every == 0) {
        const double dt = seconds_since(t_log);
        const double rate = static_cast<double>(steps_since_log) * B * world / std::max(dt, 1e-9);
        const long long ep = pos.batch_in_epoch == 0 ? pos.epoch : pos.epoch + 1;
        if (talk) {
          std::printf("epoch %lld step %lld/%lld loss %.4f lr %.5f samples/s %.0f\n", ep,
                      static_cast<long long>(pos.global_step), static_cast<long long>(total_steps),
                      sum.last_loss, learning_rate(cfg.optimizer, pos.global_step - 1, schedule_steps), rate);
          std::fflush(stdout);
        }
        metrics.write(Json()
                          .add("event", "progress")
                          .add("epoch", ep)
                          .add("step", static_cast<long long>(pos.global_step))
                          .add("loss", static_cast<double>(sum.last_loss))
                          .add("samples_per_sec", rate));
        t_log = Clock::now();
        steps_since_log = 0;
      }
      if (host_extras[kStopFlag] > 0.0f) {
        sum.stopped_by_signal = true;
        sum.signal = stop_signal();
        done = true;
        break;
      }
      if (cfg.checkpoint_every > 0 && pos.global_step % cfg.checkpoint_every == 0) DP_TRY(save(pos));
      if (pos.global_step >= total_steps) {
        done = true;
        break;
      }
      if (pos.batch_in_epoch == 0) break;  // next epoch: new permutation
    }
  }
  ops.synchronize();
  sum.train_seconds = seconds_since(t0);
  sum.steps = pos.global_step;
  DP_TRY(save(pos));
  if (sum.stopped_by_signal) {
    if (talk)
      std::printf("dp-trainer: stopping on signal %d at step %lld%s\n", sum.signal,
                  static_cast<long long>(pos.global_step),
                  cfg.checkpoint.empty() ? " (no --checkpoint: progress is lost)" : ", checkpoint written");
    metrics.write(Json().add("event", "stopped").add("step", static_cast<long long>(pos.global_step)).add("signal", sum.signal));
  }

  // Throughput: per rank, and aggregate = all samples / slowest rank's time.
  auto all = small.all_gather({static_cast<float>(sum.steps_this_run * B), static_cast<float>(sum.train_seconds)});
  if (!all) return all.error();
  double max_s = 0, total = 0;
  for (int r = 0; r < world; ++r) {
    RankThroughput t{(*all)[2 * r], (*all)[2 * r + 1]};
    sum.ranks.push_back(t);
    max_s = std::max<double>(max_s, t.seconds);
    total += t.samples;
  }
  sum.aggregate_samples_per_sec = max_s > 0 ? total / max_s : 0;

  if (cfg.evaluate && test_set && !sum.stopped_by_signal) {
    auto ev = evaluate(comm, ops, model, *test_set, eval_batch, small);
    if (!ev) return ev.error();
    sum.test_accuracy = ev->accuracy;
    sum.test_mse = ev->mse;
  }

  if (talk) {
    for (int r = 0; r < world; ++r)
      std::printf("rank %d: %.0f samples in %.2f s, %.0f samples/s\n", r, sum.ranks[r].samples,
                  sum.ranks[r].seconds, sum.ranks[r].samples / std::max(sum.ranks[r].seconds, 1e-9f));
    std::printf("aggregate: %.0f samples/s over %d ranks, %lld steps, %.2f s (rank 0 waited %.2f s for "
                "all-reduces), final loss %.4f\n",
                sum.aggregate_samples_per_sec, world, static_cast<long long>(sum.steps_this_run), max_s,
                sum.comm_wait_seconds, sum.last_loss);
    if (cfg.baseline_samples_per_sec > 0)
      std::printf("scaling efficiency: %.1f%% of %d x %.0f samples/s (world-1 baseline)\n",
                  100.0 * sum.aggregate_samples_per_sec / (world * cfg.baseline_samples_per_sec), world,
                  cfg.baseline_samples_per_sec);
    if (sum.test_accuracy >= 0) std::printf("test accuracy: %.4f\n", sum.test_accuracy);
    if (sum.test_mse >= 0) std::printf("test mse: %.3g\n", sum.test_mse);
    std::fflush(stdout);
  }
  if (leader) {
    for (int r = 0; r < world; ++r)
      metrics.write(Json()
                        .add("event", "rank")
                        .add("rank", r)
                        .add("samples", static_cast<double>(sum.ranks[r].samples))
                        .add("seconds", static_cast<double>(sum.ranks[r].seconds))
                        .add("samples_per_sec", sum.ranks[r].samples / std::max(sum.ranks[r].seconds, 1e-9f)));
    Json fin;
    fin.add("event", "final")
        .add("world", world)
        .add("steps", static_cast<long long>(sum.steps))
        .add("loss", static_cast<double>(sum.last_loss))
        .add("seconds", max_s)
        .add("rank0_comm_wait_seconds", sum.comm_wait_seconds)
        .add("aggregate_samples_per_sec", sum.aggregate_samples_per_sec)
        .add("stopped_by_signal", sum.stopped_by_signal);
    if (cfg.baseline_samples_per_sec > 0)
      fin.add("scaling_efficiency", sum.aggregate_samples_per_sec / (world * cfg.baseline_samples_per_sec));
    if (sum.test_accuracy >= 0) fin.add("test_accuracy", sum.test_accuracy);
    if (sum.test_mse >= 0) fin.add("test_mse", sum.test_mse);
    metrics.write(fin);
  }
  sum.params.resize(model.param_count());
  ops.download(sum.params.data(), model.params(), model.param_count());
  return sum;
}

}  // namespace dpt
