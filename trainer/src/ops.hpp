// Device-agnostic numeric kernels the model, loss and optimizers are written
// against. Every pointer is device memory of the Ops that allocated it; the
// CPU implementation uses OpenBLAS, the CUDA one kernels + cuBLAS. Kept
// C++17 so nvcc can include it.
#pragma once

#include <cstddef>
#include <cstdint>

// Geometry helpers run in CUDA kernels too.
#ifdef __CUDACC__
#define DPT_HOST_DEVICE __host__ __device__
#else
#define DPT_HOST_DEVICE
#endif

namespace dpt {

// NHWC image geometry of one convolution (per sample).
struct ConvGeometry {
  int in_h = 0, in_w = 0, in_c = 0;
  int kernel = 0, pad = 0;  // stride 1, square kernel
  DPT_HOST_DEVICE int out_h() const { return in_h + 2 * pad - kernel + 1; }
  DPT_HOST_DEVICE int out_w() const { return in_w + 2 * pad - kernel + 1; }
  DPT_HOST_DEVICE int patch() const { return kernel * kernel * in_c; }
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual const char* name() const = 0;
  // True when device pointers are host pointers (no staging copies needed).
  virtual bool host_memory() const = 0;

  // Zero-filled; nullptr on failure.
  virtual float* alloc(size_t n) = 0;
  virtual void release(float* p) = 0;
  virtual void upload(float* dst, const float* src, size_t n) = 0;
  virtual void download(float* dst, const float* src, size_t n) = 0;
  virtual void fill(float* x, float value, size_t n) = 0;
  // Waits until every queued kernel finished (no-op on CPU).
  virtual void synchronize() = 0;

  // Row-major C[m x n] = alpha * op(A) * op(B) + beta * C.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) = 0;

  // y[r][c] += bias[c], then max(0, .) when relu.
  virtual void bias_activation(float* y, const float* bias, int rows, int cols, bool relu) = 0;
  // dy[i] = 0 where y[i] <= 0 (y is the ReLU output).
  virtual void relu_backward(float* dy, const float* y, size_t n) = 0;
  // db[c] = sum over rows of dy[r][c].
  virtual void column_sums(float* db, const float* dy, int rows, int cols) = 0;

  // cols[(b*oh+oy)*ow+ox][(ky*k+kx)*c+ch], zero outside the image.
  virtual void im2col(const float* x, float* cols, int batch, const ConvGeometry& g) = 0;
  // dx = 0, then scatter-add of dcols (the adjoint of im2col).
  virtual void col2im(const float* dcols, float* dx, int batch, const ConvGeometry& g) = 0;
  // 2x2 stride-2 max pooling on NHWC (h, w even).
  virtual void maxpool_forward(const float* x, float* y, int batch, int h, int w, int c) = 0;
  // Routes dy to the first maximum of each window; dx fully written.
  virtual void maxpool_backward(const float* x, const float* y, const float* dy, float* dx,
                                int batch, int h, int w, int c) = 0;

  // Mean softmax cross-entropy over rows; labels hold class indices as floats.
  // dlogits = (softmax - onehot) * grad_scale. Returns the mean loss.
  virtual float softmax_cross_entropy(const float* logits, const float* labels, int rows, int cols,
                                      float* dlogits, float grad_scale) = 0;
  // Mean of (pred - target)^2 over n; dpred = 2 (pred - target) * grad_scale.
  virtual float mean_squared_error(const float* pred, const float* target, int n, float* dpred,
                                   float grad_scale) = 0;
  // Number of rows whose argmax equals the label.
  virtual int count_correct(const float* logits, const float* labels, int rows, int cols) = 0;

  // PyTorch's SGD: v = momentum * v + (g + wd * p); p -= lr * v.
  virtual void sgd_momentum(float* p, const float* g, float* v, size_t n, float lr, float momentum,
                            float weight_decay) = 0;
  // Adam with bias correction; step counts from 1.
  virtual void adam(float* p, const float* g, float* m, float* v, size_t n, float lr, float beta1,
                    float beta2, float eps, long step) = 0;
};

}  // namespace dpt
