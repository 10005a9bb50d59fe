// The start of every trainer test's configuration: which model, its learning
// rate, and silence (no progress or summary lines in test output). Each test
// then sets only what its case is about.
#pragma once

#include "trainer.hpp"

namespace dpt {

inline TrainConfig quiet_config(ModelKind kind, Shape input, int outputs, float lr) {
  TrainConfig c;
  c.model.kind = kind;
  c.model.input = input;
  c.model.outputs = outputs;
  c.optimizer.lr = lr;
  c.log_every = 0;
  c.quiet = true;
  return c;
}

}  // namespace dpt
