#include "cpu_ops.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace dpt {
namespace {

class CpuOps final : public Ops {
 public:
  const char* name() const override { return "cpu"; }
  bool host_memory() const override { return true; }

  float* alloc(size_t n) override {
    // 64-byte alignment keeps BLAS and vectorised loops on whole cache lines.
    size_t bytes = ((std::max<size_t>(n, 1) * sizeof(float) + 63) / 64) * 64;
    auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (p) std::memset(p, 0, bytes);
    return p;
  }
  void release(float* p) override { std::free(p); }
  void upload(float* dst, const float* src, size_t n) override {
    if (dst != src) std::memcpy(dst, src, n * sizeof(float));
  }
  void download(float* dst, const float* src, size_t n) override {
    if (dst != src) std::memcpy(dst, src, n * sizeof(float));
  }
  void fill(float* x, float value, size_t n) override { std::fill(x, x + n, value); }
  void copy(float* dst, const float* src, size_t n) override {
    std::memmove(dst, src, n * sizeof(float));
  }
  void synchronize() override {}
  dp::Result<void> status() override { return {}; }

  void gather_rows(float* dst, const float* table, const float* idx, int rows,
                   size_t width) override {
    for (int r = 0; r < rows; ++r)
      std::memcpy(dst + r * width, table + static_cast<size_t>(idx[r]) * width,
                  width * sizeof(float));
  }
  uint64_t copy_out(const float* src, size_t n) override {
    const uint64_t t = next_ticket_++;
    std::memcpy(slots_[t % kCopyOutSlots], src, std::min(n, kCopyOutFloats) * sizeof(float));
    return t;
  }
  const float* fetch(uint64_t ticket) override { return slots_[ticket % kCopyOutSlots]; }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  void bias_activation(float* y, const float* bias, int rows, int cols, bool relu) override {
    for (int r = 0; r < rows; ++r) {
      float* row = y + static_cast<size_t>(r) * cols;
      if (relu) {
        for (int c = 0; c < cols; ++c) row[c] = std::max(row[c] + bias[c], 0.0f);
      } else {
        for (int c = 0; c < cols; ++c) row[c] += bias[c];
      }
    }
  }

  void relu_backward(float* dy, const float* y, size_t n) override {
    for (size_t i = 0; i < n; ++i) dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  }

  void column_sums(float* db, const float* dy, int rows, int cols) override {
    std::fill(db, db + cols, 0.0f);
    for (int r = 0; r < rows; ++r) {
      const float* row = dy + static_cast<size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) db[c] += row[c];
    }
  }

  void im2col(const float* x, float* cols, int batch, const ConvGeometry& g) override {
    const int oh = g.out_h(), ow = g.out_w(), k = g.kernel, ch = g.in_c;
    const size_t patch = static_cast<size_t>(g.patch());
    for (int b = 0; b < batch; ++b) {
      const float* img = x + static_cast<size_t>(b) * g.in_h * g.in_w * ch;
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          float* row = cols + ((static_cast<size_t>(b) * oh + oy) * ow + ox) * patch;
          for (int ky = 0; ky < k; ++ky) {
            const int iy = oy + ky - g.pad;
            float* dst = row + static_cast<size_t>(ky) * k * ch;
            if (iy < 0 || iy >= g.in_h) {
              std::memset(dst, 0, sizeof(float) * k * ch);
              continue;
            }
            // The valid kx range is one contiguous run of k*ch floats in NHWC.
            const int kx0 = std::max(0, g.pad - ox);
            const int kx1 = std::min(k, g.in_w + g.pad - ox);
            if (kx0 > 0) std::memset(dst, 0, sizeof(float) * kx0 * ch);
            if (kx1 > kx0) {
              const float* src = img + (static_cast<size_t>(iy) * g.in_w + (ox + kx0 - g.pad)) * ch;
              std::memcpy(dst + static_cast<size_t>(kx0) * ch, src,
                          sizeof(float) * (kx1 - kx0) * ch);
            }
            if (kx1 < k)
              std::memset(dst + static_cast<size_t>(kx1) * ch, 0, sizeof(float) * (k - kx1) * ch);
          }
        }
      }
    }
  }

  void col2im(const float* dcols, float* dx, int batch, const ConvGeometry& g) override {
    const int oh = g.out_h(), ow = g.out_w(), k = g.kernel, ch = g.in_c;
    const size_t patch = static_cast<size_t>(g.patch());
    std::memset(dx, 0, sizeof(float) * static_cast<size_t>(batch) * g.in_h * g.in_w * ch);
    for (int b = 0; b < batch; ++b) {
      float* img = dx + static_cast<size_t>(b) * g.in_h * g.in_w * ch;
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          const float* row = dcols + ((static_cast<size_t>(b) * oh + oy) * ow + ox) * patch;
          for (int ky = 0; ky < k; ++ky) {
            const int iy = oy + ky - g.pad;
            if (iy < 0 || iy >= g.in_h) continue;
            const int kx0 = std::max(0, g.pad - ox);
            const int kx1 = std::min(k, g.in_w + g.pad - ox);
            const float* src = row + (static_cast<size_t>(ky) * k + kx0) * ch;
            float* dst = img + (static_cast<size_t>(iy) * g.in_w + (ox + kx0 - g.pad)) * ch;
            const int len = (kx1 - kx0) * ch;
            for (int i = 0; i < len; ++i) dst[i] += src[i];
          }
        }
      }
    }
  }

  void maxpool_forward(const float* x, float* y, int batch, int h, int w, int c) override {
    const int oh = h / 2, ow = w / 2;
    for (int b = 0; b < batch; ++b) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          const float* p00 = x + ((static_cast<size_t>(b) * h + 2 * oy) * w + 2 * ox) * c;
          const float* p01 = p00 + c;
          const float* p10 = p00 + static_cast<size_t>(w) * c;
          const float* p11 = p10 + c;
          float* out = y + ((static_cast<size_t>(b) * oh + oy) * ow + ox) * c;
          for (int i = 0; i < c; ++i)
            out[i] = std::max(std::max(p00[i], p01[i]), std::max(p10[i], p11[i]));
        }
      }
    }
  }

  void maxpool_backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                        int h, int w, int c) override {
    const int oh = h / 2, ow = w / 2;
    for (int b = 0; b < batch; ++b) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          const size_t in00 = ((static_cast<size_t>(b) * h + 2 * oy) * w + 2 * ox) * c;
          const size_t offs[4] = {in00, in00 + c, in00 + static_cast<size_t>(w) * c,
                                  in00 + static_cast<size_t>(w) * c + c};
          const size_t o = ((static_cast<size_t>(b) * oh + oy) * ow + ox) * c;
          for (int i = 0; i < c; ++i) {
            bool routed = false;
            for (size_t off : offs) {
              const bool here = !routed && x[off + i] == y[o + i];
              dx[off + i] = here ? dy[o + i] : 0.0f;
              routed = routed || here;
            }
          }
        }
      }
    }
  }

  void softmax_cross_entropy(const float* logits, const float* labels, int rows, int cols,
                             float* dlogits, float grad_scale, float* mean_loss) override {
    double loss = 0.0;
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + static_cast<size_t>(r) * cols;
      float* d = dlogits + static_cast<size_t>(r) * cols;
      const float zmax = *std::max_element(z, z + cols);
      float sum = 0.0f;
      for (int c = 0; c < cols; ++c) {
        d[c] = std::exp(z[c] - zmax);
        sum += d[c];
      }
      const int label = static_cast<int>(labels[r]);
      loss += std::log(sum) - (z[label] - zmax);
      const float inv = 1.0f / sum;
      for (int c = 0; c < cols; ++c) d[c] = d[c] * inv * grad_scale;
      d[label] -= grad_scale;
    }
    *mean_loss = static_cast<float>(loss / rows);
  }

  void mean_squared_error(const float* pred, const float* target, int n, float* dpred,
                          float grad_scale, float* mean_loss) override {
    double loss = 0.0;
    for (int i = 0; i < n; ++i) {
      const float e = pred[i] - target[i];
      loss += static_cast<double>(e) * e;
      dpred[i] = 2.0f * e * grad_scale;
    }
    *mean_loss = static_cast<float>(loss / n);
  }

  int count_correct(const float* logits, const float* labels, int rows, int cols) override {
    int correct = 0;
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + static_cast<size_t>(r) * cols;
      const int arg = static_cast<int>(std::max_element(z, z + cols) - z);
      correct += arg == static_cast<int>(labels[r]);
    }
    return correct;
  }

  void sgd_momentum(float* p, const float* g, float* v, size_t n, float lr, float momentum,
                    float weight_decay) override {
    for (size_t i = 0; i < n; ++i) {
      const float grad = g[i] + weight_decay * p[i];
      v[i] = momentum * v[i] + grad;
      p[i] -= lr * v[i];
    }
  }

  void adam(float* p, const float* g, float* m, float* v, size_t n, float lr, float beta1,
            float beta2, float eps, long step) override {
    const float c1 = 1.0f - std::pow(beta1, static_cast<float>(step));
    const float c2 = 1.0f - std::pow(beta2, static_cast<float>(step));
    const float step_size = lr / c1;
    const float inv_sqrt_c2 = 1.0f / std::sqrt(c2);
    for (size_t i = 0; i < n; ++i) {
      m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
    }
  }

 private:
  float slots_[kCopyOutSlots][kCopyOutFloats] = {};
  uint64_t next_ticket_ = 0;
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops() { return std::make_unique<CpuOps>(); }

}  // namespace dpt

namespace dpt {
void set_cpu_threads(int n) { openblas_set_num_threads(n); }
}  // namespace dpt
