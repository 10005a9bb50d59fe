#include "layers.hpp"

#include <cmath>

namespace dpt {
namespace {

// Kaiming-uniform weights (gain sqrt(2) for ReLU nets), zero biases.
void init_weights(Rng& rng, float* w, size_t n, int fan_in) {
  const float bound = std::sqrt(6.0f / static_cast<float>(fan_in));
  for (size_t i = 0; i < n; ++i) w[i] = (2.0f * rng.uniform() - 1.0f) * bound;
}

// y[B x out] = x[B x in] W^T + b; W is [out x in] as in PyTorch.
class Linear final : public Layer {
 public:
  Linear(Shape in, int out, bool relu) : in_(static_cast<int>(in.size())), out_(out), relu_(relu) {}
  std::string describe() const override {
    return "linear " + std::to_string(in_) + "->" + std::to_string(out_) + (relu_ ? " relu" : "");
  }
  Shape output_shape() const override { return {1, 1, out_}; }
  size_t param_count() const override { return static_cast<size_t>(out_) * in_ + out_; }
  void init_params(Rng& rng, float* p) const override {
    init_weights(rng, p, static_cast<size_t>(out_) * in_, in_);
    for (int i = 0; i < out_; ++i) p[static_cast<size_t>(out_) * in_ + i] = 0.0f;
  }
  void bind(const float* p, float* g) override {
    w_ = p;
    b_ = p + static_cast<size_t>(out_) * in_;
    dw_ = g;
    db_ = g + static_cast<size_t>(out_) * in_;
  }
  void forward(Ops& ops, const float* x, float* y, int batch) override {
    ops.gemm(false, true, batch, out_, in_, 1.0f, x, in_, w_, in_, 0.0f, y, out_);
    ops.bias_activation(y, b_, batch, out_, relu_);
  }
  void backward(Ops& ops, const float* x, const float* y, float* dy, float* dx,
                int batch) override {
    if (relu_) ops.relu_backward(dy, y, static_cast<size_t>(batch) * out_);
    ops.gemm(true, false, out_, in_, batch, 1.0f, dy, out_, x, in_, 0.0f, dw_, in_);
    ops.column_sums(db_, dy, batch, out_);
    if (dx) ops.gemm(false, false, batch, in_, out_, 1.0f, dy, out_, w_, in_, 0.0f, dx, in_);
  }

 private:
  int in_, out_;
  bool relu_;
  const float* w_ = nullptr;
  const float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

// Stride-1 "same" convolution: im2col rows are output pixels, so the GEMM
// output is already NHWC. W is [out x (k*k*in)].
class Conv final : public Layer {
 public:
  Conv(Shape in, int out, int kernel, bool relu) : out_(out), relu_(relu) {
    g_.in_h = in.h;
    g_.in_w = in.w;
    g_.in_c = in.c;
    g_.kernel = kernel;
    g_.pad = kernel / 2;
  }
  std::string describe() const override {
    return "conv " + std::to_string(g_.kernel) + "x" + std::to_string(g_.kernel) + " " +
           std::to_string(g_.in_c) + "->" + std::to_string(out_) + (relu_ ? " relu" : "");
  }
  Shape output_shape() const override { return {g_.out_h(), g_.out_w(), out_}; }
  size_t param_count() const override { return static_cast<size_t>(out_) * g_.patch() + out_; }
  void init_params(Rng& rng, float* p) const override {
    init_weights(rng, p, static_cast<size_t>(out_) * g_.patch(), g_.patch());
    for (int i = 0; i < out_; ++i) p[static_cast<size_t>(out_) * g_.patch() + i] = 0.0f;
  }
  void bind(const float* p, float* g) override {
    w_ = p;
    b_ = p + static_cast<size_t>(out_) * g_.patch();
    dw_ = g;
    db_ = g + static_cast<size_t>(out_) * g_.patch();
  }
  size_t workspace_floats(int batch) const override {
    return static_cast<size_t>(batch) * g_.out_h() * g_.out_w() * g_.patch();
  }
  void bind_workspace(float* ws) override { cols_ = ws; }
  void forward(Ops& ops, const float* x, float* y, int batch) override {
    const int pixels = batch * g_.out_h() * g_.out_w(), k = g_.patch();
    ops.im2col(x, cols_, batch, g_);
    ops.gemm(false, true, pixels, out_, k, 1.0f, cols_, k, w_, k, 0.0f, y, out_);
    ops.bias_activation(y, b_, pixels, out_, relu_);
  }
  void backward(Ops& ops, const float* x, const float* y, float* dy, float* dx,
                int batch) override {
    const int pixels = batch * g_.out_h() * g_.out_w(), k = g_.patch();
    if (relu_) ops.relu_backward(dy, y, static_cast<size_t>(pixels) * out_);
    // cols_ still holds this batch's im2col from forward.
    ops.gemm(true, false, out_, k, pixels, 1.0f, dy, out_, cols_, k, 0.0f, dw_, k);
    ops.column_sums(db_, dy, pixels, out_);
    (void)x;
    if (dx) {
      ops.gemm(false, false, pixels, k, out_, 1.0f, dy, out_, w_, k, 0.0f, cols_, k);
      ops.col2im(cols_, dx, batch, g_);
    }
  }

 private:
  ConvGeometry g_;
  int out_;
  bool relu_;
  const float* w_ = nullptr;
  const float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
  float* cols_ = nullptr;
};

class MaxPool final : public Layer {
 public:
  explicit MaxPool(Shape in) : in_(in) {}
  std::string describe() const override { return "maxpool 2x2"; }
  Shape output_shape() const override { return {in_.h / 2, in_.w / 2, in_.c}; }
  void forward(Ops& ops, const float* x, float* y, int batch) override {
    ops.maxpool_forward(x, y, batch, in_.h, in_.w, in_.c);
  }
  void backward(Ops& ops, const float* x, const float* y, float* dy, float* dx,
                int batch) override {
    if (dx) ops.maxpool_backward(x, y, dy, dx, batch, in_.h, in_.w, in_.c);
  }

 private:
  Shape in_;
};

}  // namespace

std::unique_ptr<Layer> make_linear(Shape in, int out, bool relu) {
  return std::make_unique<Linear>(in, out, relu);
}
std::unique_ptr<Layer> make_conv(Shape in, int out_channels, int kernel, bool relu) {
  return std::make_unique<Conv>(in, out_channels, kernel, relu);
}
std::unique_ptr<Layer> make_maxpool(Shape in) { return std::make_unique<MaxPool>(in); }

}  // namespace dpt
