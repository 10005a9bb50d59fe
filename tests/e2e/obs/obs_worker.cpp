// A small training loop for the observability e2e tests: each
// iteration "computes" (sleeps), then all-reduces, like a trainer's step.
//   dp_obs_worker ITERS [--compute-ms MS] [--slow RANK MS] [--hang RANK ITER]
//     --slow RANK MS   that rank computes MS longer each iteration (a straggler)
//     --hang RANK ITER that rank stops at iteration ITER and sleeps, alive:
//                      its heartbeats go on, it never enters the collective
// Prints "START pid <pid> rank <r>", "ITER <i>" every 10 iterations, "HANGING pid <pid>", "DONE" or
// "ERROR <message>" (exit 1).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dp/communicator.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s ITERS [--compute-ms MS] [--slow RANK MS] [--hang RANK ITER]\n",
                 argv[0]);
    return 2;
  }
  const long iters = std::atol(argv[1]);
  long compute_ms = 5, slow_rank = -1, slow_ms = 0, hang_rank = -1, hang_iter = -1;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--compute-ms") && i + 1 < argc) {
      compute_ms = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--slow") && i + 2 < argc) {
      slow_rank = std::atol(argv[++i]);
      slow_ms = std::atol(argv[++i]);
    } else if (!std::strcmp(argv[i], "--hang") && i + 2 < argc) {
      hang_rank = std::atol(argv[++i]);
      hang_iter = std::atol(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  auto comm = dp::init();
  if (!comm) {
    std::printf("ERROR %s\n", comm.error().message.c_str());
    return 1;
  }
  dp::Communicator& c = **comm;
  std::printf("START pid %d rank %d\n", static_cast<int>(getpid()), c.rank());
  std::fflush(stdout);
  std::vector<float> buf(1 << 14);
  for (long it = 0; it < iters; ++it) {
    long ms = compute_ms + (c.rank() == slow_rank ? slow_ms : 0);
    if (c.rank() == hang_rank && it == hang_iter) {
      std::printf("HANGING pid %d\n", static_cast<int>(getpid()));
      std::fflush(stdout);
      ms = 600'000;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = 1.0f;
    auto r = c.all_reduce(buf.data(), buf.size(), dp::DType::f32, dp::ReduceOp::sum);
    if (!r) {
      std::printf("ERROR %s\n", r.error().message.c_str());
      std::fflush(stdout);
      return 1;
    }
    if (buf[0] != static_cast<float>(c.size())) {
      std::printf("ERROR wrong sum %g\n", static_cast<double>(buf[0]));
      return 1;
    }
    if (it % 10 == 0) {
      std::printf("ITER %ld\n", it);
      std::fflush(stdout);
    }
  }
  std::printf("DONE\n");
  return 0;
}
