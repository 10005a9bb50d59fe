// Backward passes against central finite differences of the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cpu_ops.hpp"
#include "model.hpp"

namespace dpt {
namespace {

// Loss of the model on a fixed batch; writes the analytic gradient too.
float loss_and_grad(Ops& ops, Model& m, const std::vector<float>& x, const std::vector<float>& y,
                    int batch, bool classification) {
  std::copy(x.begin(), x.end(), m.input());
  const float* out = m.forward(batch);
  const int outs = static_cast<int>(m.output_size());
  float loss = 0;  // CPU ops: device memory is host memory
  if (classification)
    ops.softmax_cross_entropy(out, y.data(), batch, outs, m.output_grad(), 1.0f / batch, &loss);
  else
    ops.mean_squared_error(out, y.data(), batch * outs, m.output_grad(), 1.0f / (batch * outs),
                           &loss);
  m.backward(batch, [](size_t) {});
  return loss;
}

void check_gradients(ModelSpec spec, int batch, bool classification, size_t stride) {
  auto ops = make_cpu_ops();
  auto m = Model::create(spec, *ops, batch, 7);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Model& model = **m;
  Rng rng(3);
  std::vector<float> x(model.input_size() * batch), y(batch);
  for (auto& v : x) v = 2.0f * rng.uniform() - 1.0f;
  for (auto& v : y)
    v = classification ? static_cast<float>(rng.below(spec.outputs)) : rng.uniform();
  loss_and_grad(*ops, model, x, y, batch, classification);
  std::vector<float> analytic(model.grads(), model.grads() + model.param_count());
  const float h = 3e-3f;
  size_t checked = 0, off = 0;
  for (size_t i = 0; i < model.param_count(); i += stride) {
    float* p = model.params() + i;
    const float orig = *p;
    *p = orig + h;
    const double up = loss_and_grad(*ops, model, x, y, batch, classification);
    *p = orig - h;
    const double down = loss_and_grad(*ops, model, x, y, batch, classification);
    *p = orig;
    const double numeric = (up - down) / (2.0 * h);
    const double err =
        std::abs(numeric - analytic[i]) / std::max(1e-2, std::abs(numeric) + std::abs(analytic[i]));
    // ReLU and max-pool kinks: a step of h can cross one and spoil that one
    // difference, so a few outliers are tolerated; a wrong backward formula
    // spoils most of them.
    if (err >= 2e-2) {
      ++off;
      EXPECT_LT(err, 0.5) << "param " << i << " numeric " << numeric << " analytic " << analytic[i];
    }
    ++checked;
  }
  EXPECT_GT(checked, 10u);
  EXPECT_LE(off * 100, checked * 3) << off << " of " << checked << " gradients disagree";
}

TEST(GradientCheck, MlpWithSoftmaxCrossEntropy) {
  check_gradients(
      {.kind = ModelKind::mlp, .input = Shape{1, 1, 12}, .outputs = 5, .hidden = {9, 7}}, 4, true,
      1);
}

// A small CNN: two conv layers with `channels`, then a dense layer of `fc`.
ModelSpec cnn(Shape input, std::vector<int> channels, int kernel, int fc, int outputs) {
  return {.kind = ModelKind::cnn,
          .input = input,
          .outputs = outputs,
          .channels = std::move(channels),
          .kernel = kernel,
          .fc = fc};
}

TEST(GradientCheck, CnnConvPoolDense) {
  check_gradients(cnn({8, 8, 2}, {3, 4}, 3, 6, 4), 3, true, 1);
}

TEST(GradientCheck, CnnWithKernel5) {
  check_gradients(cnn({8, 8, 1}, {2, 3}, 5, 5, 3), 2, true, 3);
}

TEST(GradientCheck, LinearRegressionMse) {
  const ModelSpec s{.kind = ModelKind::linear, .input = Shape{1, 1, 1}, .outputs = 1};
  auto ops = make_cpu_ops();
  auto m = Model::create(s, *ops, 8, 1);
  ASSERT_TRUE(m.ok());
  // d/dw mean((w x + b - y)^2) in closed form.
  Model& model = **m;
  std::vector<float> x{0.5f, -1.0f, 0.25f, 1.0f}, y{0.1f, 0.2f, -0.3f, 0.4f};
  loss_and_grad(*ops, model, x, y, 4, false);
  const float w = model.params()[0], b = model.params()[1];
  double gw = 0, gb = 0;
  for (int i = 0; i < 4; ++i) {
    const double e = w * x[i] + b - y[i];
    gw += 2 * e * x[i] / 4;
    gb += 2 * e / 4;
  }
  EXPECT_NEAR(model.grads()[0], gw, 1e-6);
  EXPECT_NEAR(model.grads()[1], gb, 1e-6);
}

TEST(Model, ParametersAreLaidOutLastLayerFirst) {
  const ModelSpec s{.input = Shape{1, 1, 4}, .outputs = 2, .hidden = {3}};
  auto ops = make_cpu_ops();
  auto m = Model::create(s, *ops, 2, 1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->param_begin(1), 0u);  // 3->2 layer: 8 params
  EXPECT_EQ((*m)->param_end(1), 8u);
  EXPECT_EQ((*m)->param_begin(0), 8u);  // 4->3 layer: 15 params
  EXPECT_EQ((*m)->param_count(), 23u);
}

TEST(Model, SeededInitIsReproducibleAndSeedDependent) {
  ModelSpec s;
  auto ops = make_cpu_ops();
  auto a = Model::create(s, *ops, 1, 42), b = Model::create(s, *ops, 1, 42),
       c = Model::create(s, *ops, 1, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const size_t n = (*a)->param_count();
  EXPECT_EQ(0, std::memcmp((*a)->params(), (*b)->params(), n * sizeof(float)));
  EXPECT_NE(0, std::memcmp((*a)->params(), (*c)->params(), n * sizeof(float)));
}

}  // namespace
}  // namespace dpt
