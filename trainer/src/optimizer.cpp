#include "optimizer.hpp"

#include <cmath>

namespace dpt {

float learning_rate(const OptimizerSpec& spec, long step, long total_steps) {
  if (spec.warmup_steps > 0 && step < spec.warmup_steps)
    return spec.lr * static_cast<float>(step + 1) / static_cast<float>(spec.warmup_steps);
  if (spec.decay == DecayKind::cosine && total_steps > spec.warmup_steps) {
    const double t = static_cast<double>(step - spec.warmup_steps) /
                     static_cast<double>(total_steps - spec.warmup_steps);
    return static_cast<float>(spec.lr * 0.5 * (1.0 + std::cos(M_PI * std::min(t, 1.0))));
  }
  return spec.lr;
}

dp::Result<std::unique_ptr<Optimizer>> Optimizer::create(const OptimizerSpec& spec, Ops& ops,
                                                         size_t n) {
  std::unique_ptr<Optimizer> o(new Optimizer(spec, ops, n));
  const int buffers = spec.kind == OptimizerKind::adam ? 2 : 1;
  for (int i = 0; i < buffers; ++i) {
    o->state_.emplace_back(ops, n);
    if (!o->state_.back().valid())
      return dp::make_error(dp::Errc::limit, "optimizer: out of memory for its state");
  }
  return o;
}

void Optimizer::step(float* params, const float* grads, float lr) {
  ++steps_;
  if (spec_.kind == OptimizerKind::sgd) {
    ops_.sgd_momentum(params, grads, state_[0].data(), n_, lr, spec_.momentum, spec_.weight_decay);
  } else {
    ops_.adam(params, grads, state_[0].data(), state_[1].data(), n_, lr, spec_.beta1, spec_.beta2,
              spec_.eps, steps_);
  }
}

}  // namespace dpt
