// Training state on disk: written by rank 0 atomically (temp file, fsync,
// rename, fsync of the folder), so a pre-empted job finds either the old or
// the new checkpoint, never a torn one. A CRC guards against truncation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dpt {

struct TrainPosition {
  int64_t global_step = 0;     // optimizer steps taken
  int64_t epoch = 0;           // epoch of the next batch
  int64_t batch_in_epoch = 0;  // index of the next batch within that epoch
};

struct CheckpointData {
  std::string fingerprint;  // options that must match to resume
  TrainPosition position;
  std::vector<float> params;
  std::vector<std::vector<float>> optimizer_state;
};

dp::Result<void> write_checkpoint(const std::string& path, const CheckpointData& data);
// not_found when the file does not exist (a first start with --resume).
dp::Result<CheckpointData> read_checkpoint(const std::string& path);

}  // namespace dpt
