// Device-agnostic numeric kernels the model, loss and optimizers are written
// against. Every pointer is device memory of the Ops that allocated it; the
// CPU implementation uses OpenBLAS, the CUDA one kernels + cuBLAS. Kept
// C++17 so nvcc can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "dp/result.hpp"

// Geometry helpers run in CUDA kernels too.
#ifdef __CUDACC__
#define DPT_HOST_DEVICE __host__ __device__
#else
#define DPT_HOST_DEVICE
#endif

namespace dpt {

// Arithmetic of the GEMMs (CUDA): fp32, TF32 tensor-core products of fp32
// storage, or bf16 products of operands rounded to bf16 (fp32 accumulation;
// everything stored stays fp32). The CPU does fp32.
enum class Precision { fp32, tf32, bf16 };

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
  // Device to device, queued like a kernel.
  virtual void copy(float* dst, const float* src, size_t n) = 0;
  // Waits until every queued kernel finished (no-op on CPU).
  virtual void synchronize() = 0;
  // The first failure of any operation so far (a kernel launch, a copy, a
  // library call), or ok. Operations are queued without waiting, so the
  // trainer asks here once per step instead of every call returning one.
  virtual dp::Result<void> status() = 0;
  // The CUDA stream every operation is queued on (a cudaStream_t); null on
  // the CPU. Collectives on device buffers must wait for it.
  virtual void* stream() { return nullptr; }

  // Rows of `width` floats: dst[r] = table[idx[r]]. idx holds row numbers as
  // floats (exact below 2^24) in device memory, like labels.
  virtual void gather_rows(float* dst, const float* table, const float* idx, int rows,
                           size_t width) = 0;
  // Read-back without a wait: copy_out queues a copy of n <= kCopyOutFloats
  // values and returns a ticket; fetch(ticket) waits for that copy only and
  // returns the values, valid until kCopyOutSlots more copy_out calls.
  static constexpr size_t kCopyOutFloats = 16;
  static constexpr uint64_t kCopyOutSlots = 4;
  virtual uint64_t copy_out(const float* src, size_t n) = 0;
  virtual const float* fetch(uint64_t ticket) = 0;

  // Records the work `body` queues as one graph and runs it; replay() runs
  // it again (same pointers, same sizes), for one launch per step instead
  // of dozens. An error means nothing of `body` ran (no graphs on the CPU,
  // or the capture failed); the caller then runs it directly.
  virtual dp::Result<void> capture(const std::function<void()>& body) {
    (void)body;
    return dp::make_error(dp::Errc::unavailable, std::string(name()) + ": no graphs");
  }
  virtual void replay() {}

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
  // dlogits = (softmax - onehot) * grad_scale. The mean loss goes to *loss
  // (device memory), so no step waits for it.
  virtual void softmax_cross_entropy(const float* logits, const float* labels, int rows, int cols,
                                     float* dlogits, float grad_scale, float* loss) = 0;
  // Mean of (pred - target)^2 over n into *loss; dpred = 2 (pred - target) * grad_scale.
  virtual void mean_squared_error(const float* pred, const float* target, int n, float* dpred,
                                  float grad_scale, float* loss) = 0;
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
