// The CUDA path against the CPU path at world 1, on a real GPU. Skips, saying
// why, where no CUDA device is visible (every machine CI runs on); run by
// scripts/gpu-check on a GPU machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cpu_ops.hpp"
#include "cuda/cuda_ops.hpp"
#include "dp/communicator.hpp"
#include "quiet_config.hpp"
#include "trainer.hpp"

namespace dpt {
namespace {

// Image-shaped inputs whose class is the sign pattern of two fixed
// projections: learnable, no files, the same on every machine.
Dataset synthetic(size_t n, Shape shape) {
  Dataset d;
  d.count = n;
  d.shape = shape;
  d.classes = 4;
  Rng rng(99);
  const size_t per = shape.size();
  for (size_t i = 0; i < n; ++i) {
    float a = 0, b = 0;
    for (size_t k = 0; k < per; ++k) {
      const float v = 2.0f * rng.uniform() - 1.0f;
      d.x.push_back(v);
      a += (k % 3 == 0) ? v : 0.0f;
      b += (k % 5 == 1) ? v : 0.0f;
    }
    d.y.push_back(static_cast<float>((a > 0 ? 1 : 0) + (b > 0 ? 2 : 0)));
  }
  return d;
}

TrainConfig config(ModelKind kind) {
  // Small steps: a recipe where rounding differences stay rounding-sized
  // instead of being amplified into a different trajectory.
  TrainConfig c = quiet_config(kind, Shape{28, 28, 1}, 4, 0.01f);
  c.model.hidden = {128, 64};
  c.model.channels = {4, 8};
  c.model.kernel = 3;
  c.model.fc = 32;
  c.batch = 64;
  c.epochs = 1;
  c.seed = 3;
  c.evaluate = false;
  return c;
}

std::vector<float> train_on(Ops& ops, const TrainConfig& cfg, const Dataset& data) {
  dp::Context world1;
  auto comm = dp::init(world1);
  EXPECT_TRUE(comm.ok()) << comm.error().message;
  if (!comm.ok()) return {};
  auto s = train(**comm, ops, cfg, data, nullptr);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? s->params : std::vector<float>{};
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& ref) {
  double d = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (double(a[i]) - ref[i]) * (double(a[i]) - ref[i]);
    r += double(ref[i]) * ref[i];
  }
  return std::sqrt(d / r);
}

std::unique_ptr<Ops> gpu(Precision p) {
  auto ops = make_cuda_ops(0, p);
  EXPECT_TRUE(ops.ok()) << ops.error().message;
  return ops.ok() ? std::move(*ops) : nullptr;
}

void compare(ModelKind kind, size_t samples) {
  if (cuda_device_count() == 0)
    GTEST_SKIP() << "no CUDA device visible: the GPU path is checked by scripts/gpu-check";
  const TrainConfig cfg = config(kind);
  const Dataset data = synthetic(samples, cfg.model.input);
  auto cpu = make_cpu_ops();
  const std::vector<float> ref = train_on(*cpu, cfg, data);
  TrainConfig none = cfg;
  none.max_steps = 1;
  none.optimizer.lr = 1e-9f;  // one step that barely moves: about the initial parameters
  const std::vector<float> start = train_on(*cpu, none, data);
  auto g = gpu(Precision::fp32);
  ASSERT_TRUE(g);
  const std::vector<float> out = train_on(*g, cfg, data);
  ASSERT_EQ(out.size(), ref.size());
  ASSERT_FALSE(out.empty());
  const double moved = relative_l2(ref, start), err = relative_l2(out, ref);
  std::printf(
      "[gpu-check] %s cuda vs cpu: relative L2 %.3g after training moved the parameters by %.3g\n",
      kind == ModelKind::cnn ? "cnn" : "mlp", err, moved);
  // fp32 on both sides: only summation order differs (GEMM split-K, the
  // column-sum tree), about 1e-6 relative per step; a missing dependency or
  // a wrong kernel moves the result by the size of a step (~`moved`).
  EXPECT_GT(moved, 1e-2);
  EXPECT_LT(err, 1e-4);
  // Bit for bit the same on a second run: no races, no atomics.
  auto g2 = gpu(Precision::fp32);
  ASSERT_TRUE(g2);
  EXPECT_EQ(0, std::memcmp(out.data(), train_on(*g2, cfg, data).data(), out.size() * sizeof(float)))
      << "two CUDA runs differ";
  // bf16 products: near the fp32 result, yet not it (the switch acts).
  auto b = gpu(Precision::bf16);
  ASSERT_TRUE(b);
  const std::vector<float> low = train_on(*b, cfg, data);
  const double err_bf16 = relative_l2(low, ref);
  std::printf("[gpu-check] %s bf16 vs cpu fp32: relative L2 %.3g\n",
              kind == ModelKind::cnn ? "cnn" : "mlp", err_bf16);
  EXPECT_GT(err_bf16, 0.0);
  EXPECT_LT(err_bf16, 0.1 * moved);
}

TEST(GpuTraining, MlpOnCudaMatchesCpu) { compare(ModelKind::mlp, 2048); }
TEST(GpuTraining, CnnOnCudaMatchesCpu) { compare(ModelKind::cnn, 1024); }

}  // namespace
}  // namespace dpt
