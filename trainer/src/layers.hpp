// Layers of the trainer's models. Activations are NHWC (dense: H = W = 1) so a
// convolution is one im2col + one GEMM for the whole batch and flattening is
// free. Parameters and gradients are views into the model's flat buffers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops.hpp"

namespace dpt {

struct Shape {
  int h = 1, w = 1, c = 1;
  size_t size() const { return static_cast<size_t>(h) * w * c; }
};

// Seeded, portable generator (splitmix64): the same numbers on every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 random bits.
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  uint64_t below(uint64_t n) { return next() % n; }  // bias < 2^-40 for our n

 private:
  uint64_t state_;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string describe() const = 0;
  virtual Shape output_shape() const = 0;
  virtual size_t param_count() const { return 0; }
  // Host-side initial values for this layer's slice of the flat parameters.
  virtual void init_params(Rng&, float*) const {}
  // Views into the flat parameter and gradient buffers (device memory).
  virtual void bind(const float*, float*) {}
  // Scratch per sample (device floats) this layer needs at a given batch.
  virtual size_t workspace_floats(int) const { return 0; }
  virtual void bind_workspace(float*) {}

  virtual void forward(Ops& ops, const float* x, float* y, int batch) = 0;
  // dy may be overwritten. dx is null for the first layer (no input gradient).
  virtual void backward(Ops& ops, const float* x, const float* y, float* dy, float* dx,
                        int batch) = 0;
};

std::unique_ptr<Layer> make_linear(Shape in, int out, bool relu);
std::unique_ptr<Layer> make_conv(Shape in, int out_channels, int kernel, bool relu);
std::unique_ptr<Layer> make_maxpool(Shape in);

}  // namespace dpt
