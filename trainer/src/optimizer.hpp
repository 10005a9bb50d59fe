// Optimizers over the model's flat buffers (one fused pass per step) and the
// learning-rate schedule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device_buffer.hpp"
#include "dp/result.hpp"
#include "ops.hpp"

namespace dpt {

enum class OptimizerKind { sgd, adam };
enum class DecayKind { constant, cosine };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::sgd;
  float lr = 0.05f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  long warmup_steps = 0;  // linear ramp from lr/warmup to lr
  DecayKind decay = DecayKind::constant;
};

// Learning rate for 0-based step `step` of `total_steps`.
float learning_rate(const OptimizerSpec& spec, long step, long total_steps);

class Optimizer {
 public:
  static dp::Result<std::unique_ptr<Optimizer>> create(const OptimizerSpec& spec, Ops& ops,
                                                       size_t n);
  // Applies one update with learning rate lr; counts the step.
  void step(float* params, const float* grads, float lr);
  long steps_taken() const { return steps_; }
  void set_steps_taken(long s) { steps_ = s; }
  // Buffers that make up the optimizer's state (checkpointed with the params).
  std::vector<DeviceBuffer*> state() {
    std::vector<DeviceBuffer*> s;
    for (auto& b : state_) s.push_back(&b);
    return s;
  }

 private:
  Optimizer(const OptimizerSpec& spec, Ops& ops, size_t n) : spec_(spec), ops_(ops), n_(n) {}
  OptimizerSpec spec_;
  Ops& ops_;
  size_t n_;
  long steps_ = 0;
  std::vector<DeviceBuffer> state_;
};

}  // namespace dpt
