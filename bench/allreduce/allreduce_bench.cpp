// One rank of the all-reduce benchmark over libdp (Gloo backend). Rank 0
// prints one CSV line per size: impl,bytes,iters,median_us,busbw_GBps, where
// impl is libdp-shm when all_reduce goes through shared memory (ranks on one
// host, the default) and libdp-tcp otherwise (DP_SHM=off).
// busbw = bytes/time * 2(n-1)/n, as nccl-tests defines it.
// Usage: dp_allreduce_bench [min_bytes max_bytes [max_iters]]   (environment: RANK, WORLD_SIZE,
// ...)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "dp/communicator.hpp"
#include "dp/params.hpp"

namespace {

int iterations_for(size_t bytes, long long most) {
  // Enough samples for a stable median, bounded total time per size.
  const size_t budget = size_t{1} << 30;
  return static_cast<int>(std::min<long long>(std::clamp<size_t>(budget / bytes, 7, 400), most));
}

}  // namespace

int main(int argc, char** argv) {
  size_t lo = 1024, hi = size_t{256} << 20;
  long long most = 400;
  if (argc > 2) {
    auto a = dp::parse_whole_number(argv[1], 4, 1ll << 34);
    auto b = a ? dp::parse_whole_number(argv[2], *a, 1ll << 34) : a;
    auto m = argc > 3 ? dp::parse_whole_number(argv[3], 1, 400) : dp::Result<long long>(most);
    if (!a || !b || !m) {
      std::fprintf(stderr, "usage: dp_allreduce_bench [MIN_BYTES MAX_BYTES [MAX_ITERS]]: %s\n",
                   (!a   ? a
                    : !b ? b
                         : m)
                       .error()
                       .message.c_str());
      return 2;
    }
    lo = static_cast<size_t>(*a);
    hi = static_cast<size_t>(*b);
    most = *m;
  }
  auto comm = dp::init();
  if (!comm) {
    std::fprintf(stderr, "dp_allreduce_bench: %s\n", comm.error().message.c_str());
    return 2;
  }
  dp::Communicator& c = **comm;
  const int n = c.size();
  const char* impl =
      c.describe().find("shared memory") != std::string::npos ? "libdp-shm" : "libdp-tcp";
  std::vector<float> buf(hi / sizeof(float), 1.0f);
  for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    const int iters = iterations_for(bytes, most);
    std::vector<double> us;
    for (int i = -2; i < iters; ++i) {  // two warm-up rounds
      if (auto b = c.barrier(); !b) {
        std::fprintf(stderr, "barrier: %s\n", b.error().message.c_str());
        return 1;
      }
      auto t0 = std::chrono::steady_clock::now();
      auto r = c.all_reduce(buf.data(), count, dp::DType::f32, dp::ReduceOp::sum);
      auto t1 = std::chrono::steady_clock::now();
      if (!r) {
        std::fprintf(stderr, "all_reduce: %s\n", r.error().message.c_str());
        return 1;
      }
      if (i >= 0) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      // Keep values finite: sums of ones grow by n each round.
      if (buf[0] > 1e30f) std::fill(buf.begin(), buf.end(), 1.0f);
    }
    std::sort(us.begin(), us.end());
    const double med = us[us.size() / 2];
    const double busbw = static_cast<double>(bytes) / (med * 1e-6) * 2.0 * (n - 1) / n / 1e9;
    if (c.rank() == 0) {
      std::printf("%s,%zu,%d,%.1f,%.3f\n", impl, bytes, iters, med, busbw);
      std::fflush(stdout);
    }
  }
  return 0;
}
