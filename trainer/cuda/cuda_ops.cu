// CUDA Ops: every kernel, copy and cuBLAS call is queued on one stream the
// ops own (non-blocking, so nothing on the legacy default stream orders it
// by accident), and collectives wait on that stream through
// Communicator::set_stream. Failures are recorded, never fatal: status()
// returns the first, and the trainer checks it once per step.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "cuda_ops.hpp"

namespace dpt {
namespace {

constexpr int kThreads = 256;
constexpr size_t kBlasWorkspace = size_t{32} << 20;

inline int blocks_for(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b == 0 ? 1 : b) : 65535);
}

#define DPT_GRID_STRIDE(i, n)                                             \
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < (n); \
       i += size_t(blockDim.x) * gridDim.x)

__global__ void fill_kernel(float* x, float v, size_t n) { DPT_GRID_STRIDE(i, n) x[i] = v; }

__global__ void gather_rows_kernel(float* dst, const float* table, const float* idx, int rows,
                                   size_t width) {
  DPT_GRID_STRIDE(i, size_t(rows) * width) {
    const size_t r = i / width;
    dst[i] = table[size_t(idx[r]) * width + (i - r * width)];
  }
}

__global__ void bias_activation_kernel(float* y, const float* bias, int rows, int cols, bool relu) {
  DPT_GRID_STRIDE(i, size_t(rows) * cols) {
    const float v = y[i] + bias[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void relu_backward_kernel(float* dy, const float* y, size_t n) {
  DPT_GRID_STRIDE(i, n) if (y[i] <= 0.0f) dy[i] = 0.0f;
}

// Column sums in two deterministic passes (a fixed summation order, so runs
// repeat bit for bit). Pass 1: block (x, p) sums rows [p*chunk, (p+1)*chunk)
// of 32 columns with 8 row lanes, reads coalesced along the columns.
constexpr int kColTile = 32, kRowLanes = 8;
__global__ void column_partials_kernel(float* out, const float* dy, int rows, int cols, int chunk) {
  __shared__ float part[kRowLanes][kColTile + 1];
  const int c = blockIdx.x * kColTile + threadIdx.x;
  const int begin = blockIdx.y * chunk, end = min(rows, begin + chunk);
  float s = 0.0f;
  if (c < cols)
    for (int r = begin + threadIdx.y; r < end; r += kRowLanes) s += dy[size_t(r) * cols + c];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 1; k < kRowLanes; ++k) s += part[k][threadIdx.x];
    out[size_t(blockIdx.y) * cols + c] = s;
  }
}
// Pass 2: one block per column adds its partials in a fixed tree order.
__global__ void column_finish_kernel(float* db, const float* partials, int parts, int cols) {
  __shared__ float s[kThreads];
  const int c = blockIdx.x;
  float v = 0.0f;
  for (int p = threadIdx.x; p < parts; p += kThreads) v += partials[size_t(p) * cols + c];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = s[0];
}

// One block; a fixed order, so the mean repeats bit for bit.
__global__ void mean_kernel(float* out, const float* x, int n) {
  __shared__ float s[kThreads];
  float v = 0.0f;
  for (int i = threadIdx.x; i < n; i += kThreads) v += x[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = s[0] / float(n);
}

// A block writes the im2col rows of kIm2colPixels output pixels. The
// divisions that decode a pixel (b, oy, ox) and a patch element (ky, kx, ch)
// are done once per block and once per thread, not once per element (the
// per-element 64-bit index math made this the slowest kernel of the CNN);
// consecutive threads write consecutive elements of a row.
constexpr int kIm2colPixels = 16;
__global__ void im2col_kernel(const float* x, float* cols, int pixels, ConvGeometry g) {
  __shared__ int img_base[kIm2colPixels], top[kIm2colPixels], left[kIm2colPixels];
  const int oh = g.out_h(), ow = g.out_w(), patch = g.patch();
  const int first = blockIdx.x * kIm2colPixels;
  if (threadIdx.x < kIm2colPixels) {
    const int pix = first + threadIdx.x;
    const int ox = pix % ow, oy = (pix / ow) % oh, b = pix / (ow * oh);
    img_base[threadIdx.x] = b * g.in_h * g.in_w * g.in_c;
    top[threadIdx.x] = oy - g.pad;
    left[threadIdx.x] = ox - g.pad;
  }
  __syncthreads();
  const int count = min(kIm2colPixels, pixels - first);
  for (int e = threadIdx.x; e < patch; e += blockDim.x) {
    const int ch = e % g.in_c, kx = (e / g.in_c) % g.kernel, ky = e / (g.in_c * g.kernel);
    for (int p = 0; p < count; ++p) {
      const int iy = top[p] + ky, ix = left[p] + kx;
      cols[size_t(first + p) * patch + e] = (iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w)
                                                ? x[img_base[p] + (iy * g.in_w + ix) * g.in_c + ch]
                                                : 0.0f;
    }
  }
}

// Gather form of col2im: each input element sums its own contributions, so
// no atomics and a deterministic order. 32-bit index math (sizes < 2^31).
__global__ void col2im_kernel(const float* dcols, float* dx, int batch, ConvGeometry g) {
  const int oh = g.out_h(), ow = g.out_w(), patch = g.patch();
  const int n = batch * g.in_h * g.in_w * g.in_c;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    const int ch = i % g.in_c;
    const int ix = (i / g.in_c) % g.in_w;
    const int iy = (i / (g.in_c * g.in_w)) % g.in_h;
    const int b = i / (g.in_c * g.in_w * g.in_h);
    float s = 0.0f;
    for (int ky = 0; ky < g.kernel; ++ky) {
      const int oy = iy - ky + g.pad;
      if (oy < 0 || oy >= oh) continue;
      const float* row = dcols + (size_t(b) * oh + oy) * ow * patch + (ky * g.kernel) * g.in_c + ch;
      for (int kx = 0; kx < g.kernel; ++kx) {
        const int ox = ix - kx + g.pad;
        if (ox < 0 || ox >= ow) continue;
        s += row[size_t(ox) * patch + kx * g.in_c];
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
  DPT_GRID_STRIDE(i, size_t(batch) * (h / 2) * (w / 2) * c) {
    const size_t p = pool_window(i, h, w, c);
    y[i] = fmaxf(fmaxf(x[p], x[p + c]), fmaxf(x[p + size_t(w) * c], x[p + size_t(w) * c + c]));
  }
}

__global__ void maxpool_backward_kernel(const float* x, const float* y, const float* dy, float* dx,
                                        int batch, int h, int w, int c) {
  DPT_GRID_STRIDE(i, size_t(batch) * (h / 2) * (w / 2) * c) {
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
__global__ void softmax_xent_kernel(const float* z, const float* labels, int rows, int cols,
                                    float* d, float scale, float* row_loss) {
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
  const float inv = 1.0f / s;
  for (int c = 0; c < cols; ++c) dr[c] = dr[c] * inv * scale;
  dr[label] -= scale;
}

__global__ void mse_kernel(const float* p, const float* t, int n, float* d, float scale,
                           float* sq) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float e = p[i] - t[i];
  sq[i] = e * e;
  d[i] = 2.0f * e * scale;
}

__global__ void correct_kernel(const float* z, const float* labels, int rows, int cols,
                               float* hit) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* zr = z + size_t(r) * cols;
  int arg = 0;
  for (int c = 1; c < cols; ++c)
    if (zr[c] > zr[arg]) arg = c;
  hit[r] = arg == int(labels[r]) ? 1.0f : 0.0f;
}

__global__ void sgd_kernel(float* p, const float* g, float* v, size_t n, float lr, float mu,
                           float wd) {
  DPT_GRID_STRIDE(i, n) {
    v[i] = mu * v[i] + (g[i] + wd * p[i]);
    p[i] -= lr * v[i];
  }
}

// A bf16 GEMM's two operands in one launch: fp32 rounded to nearest even,
// as cuBLAS's FAST_16BF rounds them; elements of a row's padding (ld >
// width) are copied too. One kernel, not one per operand: at MLP batch 4096
// a step's 16 conversions were each a few microseconds of launch and ramp.
__global__ void to_bf16_pair_kernel(__nv_bfloat16* da, const float* sa, size_t na,
                                    __nv_bfloat16* db, const float* sb, size_t nb) {
  DPT_GRID_STRIDE(i, na + nb) {
    if (i < na) da[i] = __float2bfloat16_rn(sa[i]);
    else db[i - na] = __float2bfloat16_rn(sb[i - na]);
  }
}

// The same, four elements a thread (16-byte loads), where both sources are
// 16-byte aligned and hold whole quads; the same rounding, element by element.
__global__ void to_bf16_pair4_kernel(__nv_bfloat162* da, const float4* sa, size_t qa,
                                     __nv_bfloat162* db, const float4* sb, size_t qb) {
  DPT_GRID_STRIDE(i, qa + qb) {
    const bool first = i < qa;
    const float4 v = first ? sa[i] : sb[i - qa];
    __nv_bfloat162* d = first ? da + 2 * i : db + 2 * (i - qa);
    d[0] = __floats2bfloat162_rn(v.x, v.y);
    d[1] = __floats2bfloat162_rn(v.z, v.w);
  }
}

// The CPU's formula, so the two paths differ only by rounding.
__global__ void adam_kernel(float* p, const float* g, float* m, float* v, size_t n, float step_size,
                            float b1, float b2, float eps, float inv_sqrt_c2) {
  DPT_GRID_STRIDE(i, n) {
    m[i] = b1 * m[i] + (1.0f - b1) * g[i];
    v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
    p[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_c2 + eps);
  }
}

// bf16 is not a compute type here: its operands are staged in bf16 storage
// (CudaOps::gemm), then multiplied with fp32 accumulation.
cublasComputeType_t compute_type(Precision p) {
  return p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

class CudaOps final : public Ops {
 public:
  CudaOps(int device, Precision precision)
      : device_(device), compute_(compute_type(precision)), bf16_(precision == Precision::bf16) {}

  dp::Result<void> start() {
    ok(cudaSetDevice(device_), "cudaSetDevice");
    ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    ok(cublasCreate(&blas_), "cublasCreate");
    if (blas_) ok(cublasSetStream(blas_, stream_), "cublasSetStream");
    // cuBLAS's own workspace, so it never allocates inside a graph capture.
    ok(cudaMalloc(&blas_workspace_, kBlasWorkspace), "cudaMalloc");
    if (blas_ && blas_workspace_)
      ok(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspace), "cublasSetWorkspace");
    ok(cudaMallocHost(reinterpret_cast<void**>(&pinned_),
                      sizeof(float) * kCopyOutFloats * kCopyOutSlots),
       "cudaMallocHost");
    for (auto& e : copied_)
      ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    return status();
  }
  ~CudaOps() override {
    if (stream_) (void)cudaStreamSynchronize(stream_);
    drop_graph();
    for (auto& e : copied_)
      if (e) (void)cudaEventDestroy(e);
    if (pinned_) (void)cudaFreeHost(pinned_);
    for (float* p : {scratch_, partials_, a16_, b16_})
      if (p) (void)cudaFree(p);
    if (blas_) (void)cublasDestroy(blas_);
    if (blas_workspace_) (void)cudaFree(blas_workspace_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "cuda"; }
  bool host_memory() const override { return false; }
  void* stream() override { return stream_; }

  dp::Result<void> status() override {
    // Faults inside kernels surface asynchronously; a query does not wait.
    if (const cudaError_t e = cudaStreamQuery(stream_); e != cudaErrorNotReady)
      ok(e, "queued work");
    if (error_) return *error_;
    return {};
  }

  float* alloc(size_t n) override {
    void* p = nullptr;
    const size_t bytes = (n ? n : 1) * sizeof(float);
    if (cudaMalloc(&p, bytes) != cudaSuccess) return nullptr;
    ok(cudaMemsetAsync(p, 0, bytes, stream_), "cudaMemset");
    return static_cast<float*>(p);
  }
  void release(float* p) override { ok(cudaFree(p), "cudaFree"); }
  void upload(float* dst, const float* src, size_t n) override {
    // From pageable memory: returns once src has been staged, so the
    // caller may reuse it at once. Only set-up and checkpoints come here.
    ok(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, stream_), "upload");
  }
  void download(float* dst, const float* src, size_t n) override {
    ok(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, stream_), "download");
    ok(cudaStreamSynchronize(stream_), "download");
  }
  uint64_t copy_out(const float* src, size_t n) override {
    const uint64_t t = next_ticket_++;
    const size_t slot = t % kCopyOutSlots;
    ok(cudaMemcpyAsync(pinned_ + slot * kCopyOutFloats, src,
                       std::min(n, kCopyOutFloats) * sizeof(float), cudaMemcpyDeviceToHost,
                       stream_),
       "copy_out");
    ok(cudaEventRecord(copied_[slot], stream_), "copy_out");
    return t;
  }
  const float* fetch(uint64_t ticket) override {
    const size_t slot = ticket % kCopyOutSlots;
    ok(cudaEventSynchronize(copied_[slot]), "fetch");
    return pinned_ + slot * kCopyOutFloats;
  }
  void fill(float* x, float v, size_t n) override {
    fill_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(x, v, n);
    launched("fill");
  }
  void copy(float* dst, const float* src, size_t n) override {
    ok(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "copy");
  }
  void synchronize() override { ok(cudaStreamSynchronize(stream_), "synchronize"); }

  dp::Result<void> capture(const std::function<void()>& body) override {
    if (error_) return *error_;
    drop_graph();
    capture_error_.reset();
    capturing_ = true;
    cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
    cudaGraph_t graph = nullptr;
    if (e == cudaSuccess) {
      body();
      e = cudaStreamEndCapture(stream_, &graph);
    }
    capturing_ = false;
    if (e == cudaSuccess && !capture_error_) e = cudaGraphInstantiate(&graph_, graph, 0);
    if (graph) (void)cudaGraphDestroy(graph);
    if (e != cudaSuccess || capture_error_) {
      (void)cudaGetLastError();  // capture errors are not sticky: the stream works on
      graph_ = nullptr;
      return dp::make_error(dp::Errc::unavailable, capture_error_ ? capture_error_->message
                                                                  : std::string("graph capture: ") +
                                                                        cudaGetErrorString(e));
    }
    replay();
    return {};
  }
  void replay() override {
    if (!graph_) {
      ok(cudaErrorInvalidResourceHandle, "graph replay after its buffers changed");
      return;
    }
    ok(cudaGraphLaunch(graph_, stream_), "cudaGraphLaunch");
  }

  void gather_rows(float* dst, const float* table, const float* idx, int rows,
                   size_t width) override {
    gather_rows_kernel<<<blocks_for(size_t(rows) * width), kThreads, 0, stream_>>>(dst, table, idx,
                                                                                   rows, width);
    launched("gather_rows");
  }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
    const void *a_in = a, *b_in = b;
    cudaDataType_t in_type = CUDA_R_32F;
    if (bf16_) {
      // FAST_16BF on fp32 storage rounds inside cuBLAS and, at these shapes
      // (H200, MLP batch 4096), ran the weight gradient at SIMT speed; bf16
      // storage gets the tensor-core kernels.
      const auto staged = to_bf16(a, ta ? k : m, ta ? m : k, lda, b, tb ? n : k, tb ? k : n, ldb);
      if (!staged) return;
      a_in = staged->first;
      b_in = staged->second;
      in_type = CUDA_R_16BF;
    }
    const cublasStatus_t s =
        cublasGemmEx(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                     &alpha, b_in, in_type, ldb, a_in, in_type, lda, &beta, c, CUDA_R_32F, ldc,
                     compute_, CUBLAS_GEMM_DEFAULT);
    ok(s, "gemm");
  }
  void bias_activation(float* y, const float* bias, int rows, int cols, bool relu) override {
    bias_activation_kernel<<<blocks_for(size_t(rows) * cols), kThreads, 0, stream_>>>(y, bias, rows,
                                                                                      cols, relu);
    launched("bias_activation");
  }
  void relu_backward(float* dy, const float* y, size_t n) override {
    relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(dy, y, n);
    launched("relu_backward");
  }
  void column_sums(float* db, const float* dy, int rows, int cols) override {
    // About 256 rows per block, at most 1024 row blocks.
    int parts = std::min((rows + 255) / 256, 1024);
    const int chunk = (rows + parts - 1) / parts;
    parts = (rows + chunk - 1) / chunk;
    const dim3 grid((cols + kColTile - 1) / kColTile, parts), block(kColTile, kRowLanes);
    if (parts == 1) {
      column_partials_kernel<<<grid, block, 0, stream_>>>(db, dy, rows, cols, chunk);
    } else {
      float* partials = partials_for(size_t(parts) * cols);
      if (!partials) return;
      column_partials_kernel<<<grid, block, 0, stream_>>>(partials, dy, rows, cols, chunk);
      column_finish_kernel<<<cols, kThreads, 0, stream_>>>(db, partials, parts, cols);
    }
    launched("column_sums");
  }
  void im2col(const float* x, float* cols, int batch, const ConvGeometry& g) override {
    const int pixels = batch * g.out_h() * g.out_w();
    // At least a warp per block, at most kThreads lanes along the patch.
    const int lanes = std::max(32, std::min(kThreads, (g.patch() + 31) / 32 * 32));
    im2col_kernel<<<(pixels + kIm2colPixels - 1) / kIm2colPixels, lanes, 0, stream_>>>(x, cols,
                                                                                       pixels, g);
    launched("im2col");
  }
  void col2im(const float* dcols, float* dx, int batch, const ConvGeometry& g) override {
    col2im_kernel<<<blocks_for(size_t(batch) * g.in_h * g.in_w * g.in_c), kThreads, 0, stream_>>>(
        dcols, dx, batch, g);
    launched("col2im");
  }
  void maxpool_forward(const float* x, float* y, int batch, int h, int w, int c) override {
    maxpool_forward_kernel<<<blocks_for(size_t(batch) * h * w * c / 4), kThreads, 0, stream_>>>(
        x, y, batch, h, w, c);
    launched("maxpool_forward");
  }
  void maxpool_backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                        int h, int w, int c) override {
    maxpool_backward_kernel<<<blocks_for(size_t(batch) * h * w * c / 4), kThreads, 0, stream_>>>(
        x, y, dy, dx, batch, h, w, c);
    launched("maxpool_backward");
  }
  void softmax_cross_entropy(const float* logits, const float* labels, int rows, int cols,
                             float* dlogits, float scale, float* loss) override {
    float* rows_loss = scratch(rows);
    if (!rows_loss) return;
    softmax_xent_kernel<<<blocks_for(rows), kThreads, 0, stream_>>>(logits, labels, rows, cols,
                                                                    dlogits, scale, rows_loss);
    mean_kernel<<<1, kThreads, 0, stream_>>>(loss, rows_loss, rows);
    launched("softmax_cross_entropy");
  }
  void mean_squared_error(const float* pred, const float* target, int n, float* dpred, float scale,
                          float* loss) override {
    float* sq = scratch(n);
    if (!sq) return;
    mse_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(pred, target, n, dpred, scale, sq);
    mean_kernel<<<1, kThreads, 0, stream_>>>(loss, sq, n);
    launched("mean_squared_error");
  }
  int count_correct(const float* logits, const float* labels, int rows, int cols) override {
    float* hits = scratch(size_t(rows) + 1);
    if (!hits) return 0;
    correct_kernel<<<blocks_for(rows), kThreads, 0, stream_>>>(logits, labels, rows, cols, hits);
    mean_kernel<<<1, kThreads, 0, stream_>>>(hits + rows, hits, rows);
    launched("count_correct");
    float mean = 0;
    download(&mean, hits + rows, 1);
    return static_cast<int>(std::lround(double(mean) * rows));
  }
  void sgd_momentum(float* p, const float* g, float* v, size_t n, float lr, float mu,
                    float wd) override {
    sgd_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(p, g, v, n, lr, mu, wd);
    launched("sgd_momentum");
  }
  void adam(float* p, const float* g, float* m, float* v, size_t n, float lr, float b1, float b2,
            float eps, long step) override {
    const float c1 = 1.0f - std::pow(b1, float(step)), c2 = 1.0f - std::pow(b2, float(step));
    adam_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(p, g, m, v, n, lr / c1, b1, b2, eps,
                                                         1.0f / std::sqrt(c2));
    launched("adam");
  }

 private:
  // The first failure is kept; during a capture it fails the capture only.
  void record(std::string message) {
    std::optional<dp::Error>& slot = capturing_ ? capture_error_ : error_;
    if (!slot) slot = dp::make_error(dp::Errc::internal, std::move(message));
  }
  void ok(cudaError_t e, const char* what) {
    if (e != cudaSuccess) record(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
  }
  void ok(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
      record(std::string("cuBLAS ") + what + ": " + cublasGetStatusString(s));
  }
  void drop_graph() {
    if (graph_) (void)cudaGraphExecDestroy(graph_);
    graph_ = nullptr;
  }
  // A launch with a bad configuration fails at once, without a sticky error.
  void launched(const char* kernel) { ok(cudaGetLastError(), kernel); }

  // Device scratch that grows to the largest request (the first steps), then
  // is reused; freeing waits for queued work that may still read it.
  float* grow(float*& buf, size_t& have, size_t n, const char* what) {
    if (n <= have) return buf;
    drop_graph();  // it would read the freed buffer
    if (buf) {
      ok(cudaStreamSynchronize(stream_), what);
      ok(cudaFree(buf), what);
    }
    buf = nullptr;
    have = 0;
    if (cudaMalloc(reinterpret_cast<void**>(&buf), n * sizeof(float)) != cudaSuccess) {
      ok(cudaErrorMemoryAllocation, what);
      return nullptr;
    }
    have = n;
    return buf;
  }
  float* scratch(size_t n) { return grow(scratch_, scratch_size_, n, "scratch"); }
  // bf16 copies of a GEMM's two stored matrices (rows x width, leading
  // dimension ld), each in its own growing buffer (sizes in floats: two
  // bf16 per float, rounded up to whole quads).
  std::optional<std::pair<const __nv_bfloat16*, const __nv_bfloat16*>> to_bf16(
      const float* a, int rows_a, int width_a, int lda, const float* b, int rows_b, int width_b,
      int ldb) {
    auto extent = [](int rows, int width, int ld) {
      return rows > 0 && width > 0 ? size_t(rows - 1) * ld + width : size_t{0};
    };
    const size_t na = extent(rows_a, width_a, lda), nb = extent(rows_b, width_b, ldb);
    float* ra = grow(a16_, a16_size_, (na + 3) / 4 * 2, "bf16 operand");
    float* rb = ra ? grow(b16_, b16_size_, (nb + 3) / 4 * 2, "bf16 operand") : nullptr;
    if (!ra || !rb) return std::nullopt;
    auto* da = reinterpret_cast<__nv_bfloat16*>(ra);
    auto* db = reinterpret_cast<__nv_bfloat16*>(rb);
    auto quads = [](const float* p, size_t n) {
      return n % 4 == 0 && reinterpret_cast<uintptr_t>(p) % alignof(float4) == 0;
    };
    if (quads(a, na) && quads(b, nb)) {
      to_bf16_pair4_kernel<<<blocks_for((na + nb) / 4), kThreads, 0, stream_>>>(
          reinterpret_cast<__nv_bfloat162*>(da), reinterpret_cast<const float4*>(a), na / 4,
          reinterpret_cast<__nv_bfloat162*>(db), reinterpret_cast<const float4*>(b), nb / 4);
    } else {
      to_bf16_pair_kernel<<<blocks_for(na + nb), kThreads, 0, stream_>>>(da, a, na, db, b, nb);
    }
    launched("to_bf16");
    return std::pair<const __nv_bfloat16*, const __nv_bfloat16*>{da, db};
  }
  float* partials_for(size_t n) {
    return grow(partials_, partials_size_, n, "column sums scratch");
  }

  int device_;
  cublasComputeType_t compute_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  std::optional<dp::Error> error_, capture_error_;
  bool capturing_ = false;
  cudaGraphExec_t graph_ = nullptr;
  void* blas_workspace_ = nullptr;
  float* scratch_ = nullptr;
  size_t scratch_size_ = 0;
  float* partials_ = nullptr;
  size_t partials_size_ = 0;
  bool bf16_;
  float *a16_ = nullptr, *b16_ = nullptr;  // bf16 GEMM operands (bf16_ only)
  size_t a16_size_ = 0, b16_size_ = 0;
  float* pinned_ = nullptr;
  cudaEvent_t copied_[kCopyOutSlots] = {};
  uint64_t next_ticket_ = 0;
};

}  // namespace

int cuda_device_count() {
  int n = 0;  // left unwritten on error (no driver)
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

dp::Result<std::unique_ptr<Ops>> make_cuda_ops(int device, Precision precision) {
  auto ops = std::make_unique<CudaOps>(device, precision);
  if (auto s = ops->start(); !s) return s.error();
  return std::unique_ptr<Ops>(std::move(ops));
}

}  // namespace dpt
