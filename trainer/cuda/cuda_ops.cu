#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_ops.hpp"

namespace dpt {
namespace {

constexpr int kThreads = 256;

inline int blocks_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b == 0 ? 1 : b) : 65535);
}

// A failed kernel launch or copy is a bug or a dead device: no way to carry
// on training, so report where and stop the process.
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "dp-trainer: CUDA %s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "dp-trainer: cuBLAS %s failed: status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

__global__ void fill_kernel(float* x, float v, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) x[i] = v;
}

__global__ void bias_activation_kernel(float* y, const float* bias, int rows, int cols, bool relu) {
  const size_t n = size_t(rows) * cols;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const float v = y[i] + bias[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void relu_backward_kernel(float* dy, const float* y, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x)
    if (y[i] <= 0.0f) dy[i] = 0.0f;
}

__global__ void column_sums_kernel(float* db, const float* dy, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += dy[size_t(r) * cols + c];
  db[c] = s;
}

__global__ void im2col_kernel(const float* x, float* cols, int batch, ConvGeometry g) {
  const int oh = g.out_h(), ow = g.out_w(), patch = g.patch();
  const size_t n = size_t(batch) * oh * ow * patch;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const int e = int(i % patch);
    const size_t pix = i / patch;
    const int ox = int(pix % ow), oy = int((pix / ow) % oh), b = int(pix / (size_t(ow) * oh));
    const int ch = e % g.in_c, kx = (e / g.in_c) % g.kernel, ky = e / (g.in_c * g.kernel);
    const int iy = oy + ky - g.pad, ix = ox + kx - g.pad;
    cols[i] = (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w)
                  ? x[((size_t(b) * g.in_h + iy) * g.in_w + ix) * g.in_c + ch]
                  : 0.0f;
  }
}

// Gather form of col2im: each input element sums its own contributions, so
// no atomics and a deterministic order.
__global__ void col2im_kernel(const float* dcols, float* dx, int batch, ConvGeometry g) {
  const int oh = g.out_h(), ow = g.out_w(), patch = g.patch();
  const size_t n = size_t(batch) * g.in_h * g.in_w * g.in_c;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const int ch = int(i % g.in_c);
    const int ix = int((i / g.in_c) % g.in_w);
    const int iy = int((i / (size_t(g.in_c) * g.in_w)) % g.in_h);
    const int b = int(i / (size_t(g.in_c) * g.in_w * g.in_h));
    float s = 0.0f;
    for (int ky = 0; ky < g.kernel; ++ky) {
      const int oy = iy - ky + g.pad;
      if (oy < 0 || oy >= oh) continue;
      for (int kx = 0; kx < g.kernel; ++kx) {
        const int ox = ix - kx + g.pad;
        if (ox < 0 || ox >= ow) continue;
        s += dcols[((size_t(b) * oh + oy) * ow + ox) * patch + (ky * g.kernel + kx) * g.in_c + ch];
      }
    }
    dx[i] = s;
  }
}

// NHWC input offset of the top-left element of output i's 2x2 pooling window.
__device__ size_t pool_window(size_t i, int h, int w, int c) {
  const int oh = h / 2, ow = w / 2;
  const int ch = int(i % c), ox = int((i / c) % ow), oy = int((i / (size_t(c) * ow)) % oh);
  const int b = int(i / (size_t(c) * ow * oh));
  return ((size_t(b) * h + 2 * oy) * w + 2 * ox) * c + ch;
}

__global__ void maxpool_forward_kernel(const float* x, float* y, int batch, int h, int w, int c) {
  const size_t n = size_t(batch) * (h / 2) * (w / 2) * c;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const size_t p = pool_window(i, h, w, c);
    y[i] = fmaxf(fmaxf(x[p], x[p + c]), fmaxf(x[p + size_t(w) * c], x[p + size_t(w) * c + c]));
  }
}

__global__ void maxpool_backward_kernel(const float* x, const float* y, const float* dy, float* dx,
                                        int batch, int h, int w, int c) {
  const size_t n = size_t(batch) * (h / 2) * (w / 2) * c;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    const size_t p = pool_window(i, h, w, c);
    const size_t offs[4] = {p, p + c, p + size_t(w) * c, p + size_t(w) * c + c};
    bool routed = false;
    for (int k = 0; k < 4; ++k) {
      const bool here = !routed && x[offs[k]] == y[i];
      dx[offs[k]] = here ? dy[i] : 0.0f;
      routed = routed || here;
    }
  }
}

// One thread per row: the class count is small (10).
__global__ void softmax_xent_kernel(const float* z, const float* labels, int rows, int cols, float* d,
                                    float scale, float* row_loss) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* zr = z + size_t(r) * cols;
  float* dr = d + size_t(r) * cols;
  float m = zr[0];
  for (int c = 1; c < cols; ++c) m = fmaxf(m, zr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    dr[c] = expf(zr[c] - m);
    s += dr[c];
  }
  const int label = int(labels[r]);
  row_loss[r] = logf(s) - (zr[label] - m);
  for (int c = 0; c < cols; ++c) dr[c] = dr[c] / s * scale;
  dr[label] -= scale;
}

__global__ void mse_kernel(const float* p, const float* t, int n, float* d, float scale, float* sq) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float e = p[i] - t[i];
  sq[i] = e * e;
  d[i] = 2.0f * e * scale;
}

__global__ void correct_kernel(const float* z, const float* labels, int rows, int cols, float* hit) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* zr = z + size_t(r) * cols;
  int arg = 0;
  for (int c = 1; c < cols; ++c)
    if (zr[c] > zr[arg]) arg = c;
  hit[r] = arg == int(labels[r]) ? 1.0f : 0.0f;
}

__global__ void sgd_kernel(float* p, const float* g, float* v, size_t n, float lr, float mu, float wd) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    v[i] = mu * v[i] + g[i] + wd * p[i];
    p[i] -= lr * v[i];
  }
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, size_t n, float lr, float b1,
                            float b2, float eps, float c1, float c2) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(blockDim.x) * gridDim.x) {
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] -= (lr / c1) * m[i] / (sqrtf(v[i] / c2) + eps);
  }
}

class CudaOps final : public Ops {
 public:
  explicit CudaOps(int device) {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cublasCreate(&blas_), "cublasCreate");
  }
  ~CudaOps() override {
    if (scratch_) cudaFree(scratch_);
    cublasDestroy(blas_);
  }
  const char* name() const override { return "cuda"; }
  bool host_memory() const override { return false; }

  float* alloc(size_t n) override {
    void* p = nullptr;
    if (cudaMalloc(&p, (n ? n : 1) * sizeof(float)) != cudaSuccess) return nullptr;
    cudaMemset(p, 0, (n ? n : 1) * sizeof(float));
    return static_cast<float*>(p);
  }
  void release(float* p) override { cudaFree(p); }
  void upload(float* dst, const float* src, size_t n) override {
    check(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice), "upload");
  }
  void download(float* dst, const float* src, size_t n) override {
    check(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost), "download");
  }
  void fill(float* x, float v, size_t n) override { fill_kernel<<<blocks_for(n), kThreads>>>(x, v, n); }
  void synchronize() override { check(cudaDeviceSynchronize(), "synchronize"); }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) override {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    check(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                      &alpha, b, ldb, a, lda, &beta, c, ldc),
          "sgemm");
  }
  void bias_activation(float* y, const float* bias, int rows, int cols, bool relu) override {
    bias_activation_kernel<<<blocks_for(size_t(rows) * cols), kThreads>>>(y, bias, rows, cols, relu);
  }
  void relu_backward(float* dy, const float* y, size_t n) override {
    relu_backward_kernel<<<blocks_for(n), kThreads>>>(dy, y, n);
  }
  void column_sums(float* db, const float* dy, int rows, int cols) override {
    column_sums_kernel<<<blocks_for(cols), kThreads>>>(db, dy, rows, cols);
  }
  void im2col(const float* x, float* cols, int batch, const ConvGeometry& g) override {
    im2col_kernel<<<blocks_for(size_t(batch) * g.out_h() * g.out_w() * g.patch()), kThreads>>>(x, cols, batch, g);
  }
  void col2im(const float* dcols, float* dx, int batch, const ConvGeometry& g) override {
    col2im_kernel<<<blocks_for(size_t(batch) * g.in_h * g.in_w * g.in_c), kThreads>>>(dcols, dx, batch, g);
  }
  void maxpool_forward(const float* x, float* y, int batch, int h, int w, int c) override {
    maxpool_forward_kernel<<<blocks_for(size_t(batch) * h * w * c / 4), kThreads>>>(x, y, batch, h, w, c);
  }
  void maxpool_backward(const float* x, const float* y, const float* dy, float* dx, int batch, int h,
                        int w, int c) override {
    maxpool_backward_kernel<<<blocks_for(size_t(batch) * h * w * c / 4), kThreads>>>(x, y, dy, dx, batch, h, w, c);
  }
  float softmax_cross_entropy(const float* logits, const float* labels, int rows, int cols, float* dlogits,
                              float scale) override {
    softmax_xent_kernel<<<blocks_for(rows), kThreads>>>(logits, labels, rows, cols, dlogits, scale, scratch(rows));
    return host_mean(rows);
  }
  float mean_squared_error(const float* pred, const float* target, int n, float* dpred, float scale) override {
    mse_kernel<<<blocks_for(n), kThreads>>>(pred, target, n, dpred, scale, scratch(n));
    return host_mean(n);
  }
  int count_correct(const float* logits, const float* labels, int rows, int cols) override {
    correct_kernel<<<blocks_for(rows), kThreads>>>(logits, labels, rows, cols, scratch(rows));
    return static_cast<int>(std::lround(host_mean(rows) * rows));
  }
  void sgd_momentum(float* p, const float* g, float* v, size_t n, float lr, float mu, float wd) override {
    sgd_kernel<<<blocks_for(n), kThreads>>>(p, g, v, n, lr, mu, wd);
  }
  void adam(float* p, const float* g, float* m, float* v, size_t n, float lr, float b1, float b2, float eps,
            long step) override {
    const float c1 = 1.0f - std::pow(b1, float(step)), c2 = 1.0f - std::pow(b2, float(step));
    adam_kernel<<<blocks_for(n), kThreads>>>(p, g, m, v, n, lr, b1, b2, eps, c1, c2);
  }

 private:
  // Per-row results; grows once to the largest batch, then is reused.
  float* scratch(size_t n) {
    if (n > scratch_size_) {
      if (scratch_) cudaFree(scratch_);
      check(cudaMalloc(reinterpret_cast<void**>(&scratch_), n * sizeof(float)), "cudaMalloc");
      scratch_size_ = n;
      host_.resize(n);
    }
    return scratch_;
  }
  float host_mean(size_t n) {
    check(cudaMemcpy(host_.data(), scratch_, n * sizeof(float), cudaMemcpyDeviceToHost), "download");
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += host_[i];
    return static_cast<float>(s / n);
  }
  cublasHandle_t blas_ = nullptr;
  float* scratch_ = nullptr;
  size_t scratch_size_ = 0;
  std::vector<float> host_;
};

}  // namespace

int cuda_device_count() {
  int n = 0;  // left unwritten on error (no driver)
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

std::unique_ptr<Ops> make_cuda_ops(int device_hint) {
  const int n = cuda_device_count();
  return std::make_unique<CudaOps>(n > 0 ? device_hint % n : 0);
}

}  // namespace dpt
