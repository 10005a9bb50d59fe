// The training loop: the same code on every device and for every world size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dataset.hpp"
#include "dp/communicator.hpp"
#include "model.hpp"
#include "ops.hpp"
#include "optimizer.hpp"

namespace dpt {

enum class Task { fashion, regression };

struct TrainConfig {
  Task task = Task::fashion;
  ModelSpec model;
  OptimizerSpec optimizer;
  int batch = 128;  // per rank
  long epochs = 1;
  long max_steps = 0;  // 0: no limit
  uint64_t seed = 1;
  size_t bucket_bytes = 0;  // 0: per layer on a GPU, 1 MiB on CPUs
  long log_every = 100;
  std::string checkpoint;     // empty: none
  long checkpoint_every = 0;  // 0: only when stopping and at the end
  bool resume = false;
  std::string metrics;                  // JSON lines, rank 0
  double baseline_samples_per_sec = 0;  // world-1 figure for scaling efficiency
  bool evaluate = true;
  bool quiet = false;  // no progress/summary lines (tests)
};

struct RankThroughput {
  float samples = 0, seconds = 0;
};

struct TrainSummary {
  int64_t steps = 0;  // optimizer steps at exit
  int64_t steps_this_run = 0;
  bool stopped_by_signal = false;
  int signal = 0;
  float last_loss = 0;  // global mean loss of the last step
  double train_seconds = 0;
  double comm_wait_seconds = 0;  // blocked in gradient all-reduces after backward
  std::vector<RankThroughput> ranks;
  double aggregate_samples_per_sec = 0;
  double test_accuracy = -1;  // classification
  double test_mse = -1;       // regression
  std::vector<float> params;  // host copy of the final parameters
};

// Runs training on already loaded data. Progress goes to `out` on rank 0.
dp::Result<TrainSummary> train(dp::Communicator& comm, Ops& ops, const TrainConfig& cfg,
                               const Dataset& train_set, const Dataset* test_set);

}  // namespace dpt
