// Command line of dp-trainer. Every bad value gets one line naming the
// option and the fix.
#pragma once

#include <string>
#include <vector>

#include "dp/result.hpp"
#include "trainer.hpp"

namespace dpt {

enum class DeviceChoice { automatic, cpu, cuda };

struct Options {
  TrainConfig train;
  int global_batch = 0;  // 0: use train.batch per rank
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  size_t train_limit = 0;
  size_t regression_samples = 4096;
  DeviceChoice device = DeviceChoice::automatic;
  Precision precision = Precision::fp32;
  int threads = 0;  // BLAS threads per rank; 0: leave OpenBLAS's choice
  bool help = false;
};

dp::Result<Options> parse_options(const std::vector<std::string>& args);
const char* usage();

}  // namespace dpt
