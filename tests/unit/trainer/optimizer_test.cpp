#include <gtest/gtest.h>

#include <cmath>

#include "cpu_ops.hpp"
#include "optimizer.hpp"

namespace dpt {
namespace {

TEST(Optimizer, SgdMomentumMatchesPyTorchRecurrence) {
  auto ops = make_cpu_ops();
  OptimizerSpec spec;
  spec.momentum = 0.9f;
  auto opt = Optimizer::create(spec, *ops, 1);
  ASSERT_TRUE(opt.ok());
  float p = 1.0f, g = 0.5f;
  (*opt)->step(&p, &g, 0.1f);  // v = 0.5, p = 0.95
  EXPECT_FLOAT_EQ(p, 0.95f);
  (*opt)->step(&p, &g, 0.1f);  // v = 0.95, p = 0.855
  EXPECT_FLOAT_EQ(p, 0.855f);
  EXPECT_EQ((*opt)->steps_taken(), 2);
}

TEST(Optimizer, AdamFirstStepMovesByLearningRate) {
  auto ops = make_cpu_ops();
  OptimizerSpec spec;
  spec.kind = OptimizerKind::adam;
  auto opt = Optimizer::create(spec, *ops, 2);
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ((*opt)->state().size(), 2u);
  float p[2] = {1.0f, 1.0f}, g[2] = {0.3f, -20.0f};
  (*opt)->step(p, g, 0.01f);
  EXPECT_NEAR(p[0], 0.99f, 1e-6);  // bias-corrected m/sqrt(v) = sign(g)
  EXPECT_NEAR(p[1], 1.01f, 1e-6);
}

TEST(Optimizer, WarmupRampsThenHolds) {
  OptimizerSpec spec;
  spec.lr = 0.1f;
  spec.warmup_steps = 4;
  EXPECT_FLOAT_EQ(learning_rate(spec, 0, 100), 0.025f);
  EXPECT_FLOAT_EQ(learning_rate(spec, 3, 100), 0.1f);
  EXPECT_FLOAT_EQ(learning_rate(spec, 50, 100), 0.1f);
  spec.decay = DecayKind::cosine;
  EXPECT_FLOAT_EQ(learning_rate(spec, 4, 104), 0.1f);
  EXPECT_NEAR(learning_rate(spec, 54, 104), 0.05f, 1e-6);
  EXPECT_NEAR(learning_rate(spec, 104, 104), 0.0f, 1e-7);
}

}  // namespace
}  // namespace dpt
