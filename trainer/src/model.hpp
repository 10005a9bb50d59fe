// A sequential model over flat parameter and gradient buffers. Parameters are
// laid out in reverse layer order, so the gradients the backward pass
// produces first sit at the start of the buffer and every all-reduce bucket
// is one contiguous range that is complete as soon as its last layer is done.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device_buffer.hpp"
#include "dp/result.hpp"
#include "layers.hpp"
#include "ops.hpp"

namespace dpt {

enum class ModelKind { mlp, cnn, linear };

struct ModelSpec {
  ModelKind kind = ModelKind::mlp;
  Shape input{28, 28, 1};
  int outputs = 10;
  std::vector<int> hidden{512, 256};  // mlp widths
  std::vector<int> channels{16, 32};  // cnn: two conv layers
  int kernel = 5;                     // cnn
  int fc = 128;                       // cnn: width of the hidden dense layer
  std::string describe() const;
};

class Model {
 public:
  // extra_grad_floats: room after the gradients for values reduced with them.
  static dp::Result<std::unique_ptr<Model>> create(const ModelSpec& spec, Ops& ops, int max_batch,
                                                   uint64_t seed, size_t extra_grad_floats = 0);

  size_t param_count() const { return param_count_; }
  size_t layer_count() const { return layers_.size(); }
  // [begin, end) of layer i's parameters in the flat buffers.
  size_t param_begin(size_t layer) const { return offsets_[layer]; }
  size_t param_end(size_t layer) const { return offsets_[layer] + layers_[layer]->param_count(); }
  std::string describe() const;

  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  float* input() { return acts_.front().data(); }
  size_t input_size() const { return input_shape_.size(); }
  size_t output_size() const { return output_shape_.size(); }

  // Returns the output (logits) of the batch currently in input().
  const float* forward(int batch);
  // Where the loss writes d(loss)/d(output) before backward().
  float* output_grad() { return dacts_[layers_.size() % 2].data(); }
  // on_layer_done(i) runs once layer i's parameter gradients are final.
  void backward(int batch, const std::function<void(size_t)>& on_layer_done);

 private:
  Model(Ops& ops) : ops_(ops) {}
  dp::Result<void> add_layers(const ModelSpec& spec);
  // The parameters in reverse layout, gradients, workspace and activations.
  dp::Result<void> allocate(int max_batch, size_t extra_grad_floats);
  void init_params(int max_batch, uint64_t seed);
  Ops& ops_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> offsets_;
  size_t param_count_ = 0;
  Shape input_shape_, output_shape_;
  DeviceBuffer params_, grads_, workspace_;
  std::vector<DeviceBuffer> acts_;  // acts_[0] input, acts_[i + 1] output of layer i
  DeviceBuffer dacts_[2];           // ping-pong gradients of activations
};

}  // namespace dpt
