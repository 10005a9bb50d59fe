// What the hang and straggler accounting costs: per collective,
// the op queue's op_begin + op_end; per heartbeat (about one a second), the
// frame with the counters. Medians of several repetitions.
//   dp-progress-bench [CALLS]   (default 2 000 000 per repetition; ctest's
//   bench.progress runs it with 20 000 as a smoke test)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "dp/params.hpp"
#include "rank_progress.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double median_ns_per_call(F&& f, long calls, int reps) {
  std::vector<double> ns;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    for (long i = 0; i < calls; ++i) f();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
                 static_cast<double>(calls));
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed =
      argc > 1 ? dp::parse_whole_number(argv[1], 20, 1ll << 40) : dp::Result<long long>(2'000'000);
  if (!parsed) {
    std::fprintf(stderr, "usage: dp-progress-bench [CALLS]: %s\n", parsed.error().message.c_str());
    return 2;
  }
  const long calls = static_cast<long>(*parsed);
  auto& p = dp::detail::rank_progress();
  p.init_begin();
  p.init_done();
  const double op = median_ns_per_call(
      [&] {
        p.op_begin();
        p.op_end();
      },
      calls, 9);
  std::string frame;
  const double beat =
      median_ns_per_call([&] { dp::detail::heartbeat_frame(frame); }, calls / 20, 9);
  std::printf("per collective (op_begin + op_end): %.1f ns\n", op);
  std::printf("per heartbeat frame with progress:  %.1f ns (%zu bytes)\n", beat, frame.size());
  // A step of dp-trainer's MLP at world 2 takes about 10 ms with a few collectives.
  std::printf("share of a 1 ms collective: %.5f %%\n", 100.0 * op / 1e6);
  return 0;
}
