// Averages gradients across ranks in buckets, each launched with the
// communicator's asynchronous all-reduce as soon as the backward pass has
// finished its layers (as PyTorch DDP does), so communication of the late
// layers overlaps the computation of the early ones.
#pragma once

#include <memory>
#include <vector>

#include "dp/communicator.hpp"
#include "model.hpp"

namespace dpt {

class GradientSync {
 public:
  // extra_floats: values stored after the gradients that are averaged with
  // the last bucket (the trainer's stop flag).
  GradientSync(dp::Communicator& comm, Model& model, size_t bucket_bytes, size_t extra_floats);

  void begin_step();
  // Call from Model::backward's on_layer_done.
  void on_layer_done(size_t layer);
  // Waits for every bucket; the first error of the step, if any.
  dp::Result<void> finish();

 private:
  struct Bucket {
    size_t begin = 0, end = 0;  // float range in the gradient buffer
    size_t trigger_layer = 0;   // lowest layer index: done last in backward
  };
  dp::Communicator& comm_;
  Model& model_;
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<dp::Work>> pending_;
  dp::Result<void> status_;
};

}  // namespace dpt
