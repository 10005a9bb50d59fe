// One rank of a multi-process communicator test, started by
// multiprocess_test.cpp with the environment a launcher would give it.
//   comm_worker collectives   all-reduce (every dtype, 1 element .. 64 MiB),
//                             broadcast, all-gather, barrier, async overlap
//   comm_worker long          all-reduce 64 MiB in a loop until it fails
//   comm_worker stall         rank 0 all-reduces once (and fails when the
//                             timeout passes); the others never call it
//   comm_worker linger        all-reduces once, leaves the world (goodbye), and
//                             only DP_TEST_LINGER_MS later exits (a checkpoint
//                             written after the communicator is gone)
//   comm_worker restart       generation 0 (DP_RESTART_COUNT): as long; the
//                             next: as collectives, then "OK ... generation N"
//   comm_worker priorities    all-reduces once, then prints "NICE main M lowered
//                             K": its own nice value and how many of its
//                             threads run at a higher one (Gloo's network thread)
// Prints "OK" / "LOOPING pid <pid>" / "ERROR <message>" lines; exit 0 on success.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dp/communicator.hpp"
#include "reduce_kernels.hpp"

namespace {

int g_rank = 0;

#define CHECK(cond, ...)                                        \
  do {                                                          \
    if (!(cond)) {                                              \
      std::printf("ERROR rank %d line %d: ", g_rank, __LINE__); \
      std::printf(__VA_ARGS__);                                 \
      std::printf("\n");                                        \
      std::fflush(stdout);                                      \
      return false;                                             \
    }                                                           \
  } while (0)

#define CHECK_OK(expr)                                                          \
  do {                                                                          \
    auto r_ = (expr);                                                           \
    CHECK(r_.ok(), "%s: %s", #expr, r_.ok() ? "" : r_.error().message.c_str()); \
  } while (0)

// Values that stay exact in fp32 after summing up to 4 ranks and halving.
float value(size_t i, int rank) { return static_cast<float>(i % 1024) + static_cast<float>(rank); }

bool all_reduce_f32(dp::Communicator& c, size_t n, dp::ReduceOp op) {
  const int w = c.size();
  std::vector<float> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = value(i, c.rank());
  CHECK_OK(c.all_reduce(buf.data(), n, dp::DType::f32, op));
  const float rank_sum = static_cast<float>(w * (w - 1) / 2);
  for (size_t i = 0; i < n; ++i) {
    float want = static_cast<float>(w) * static_cast<float>(i % 1024) + rank_sum;
    if (op == dp::ReduceOp::avg) want /= static_cast<float>(w);
    CHECK(buf[i] == want, "all_reduce f32 n=%zu op=%d: element %zu is %g, want %g", n,
          static_cast<int>(op), i, static_cast<double>(buf[i]), static_cast<double>(want));
  }
  return true;
}

template <class T>
bool all_reduce_int(dp::Communicator& c, dp::DType t, size_t n) {
  std::vector<T> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = static_cast<T>(i) * (c.rank() + 1);
  CHECK_OK(c.all_reduce(buf.data(), n, t, dp::ReduceOp::sum));
  const int w = c.size();
  for (size_t i = 0; i < n; ++i) {
    CHECK(buf[i] == static_cast<T>(i) * (w * (w + 1) / 2), "int all_reduce element %zu", i);
  }
  return true;
}

bool all_reduce_16(dp::Communicator& c, dp::DType t, size_t n) {
  const bool half = t == dp::DType::f16;
  auto to16 = half ? dp::detail::float_to_half : dp::detail::float_to_bf16;
  auto from16 = half ? dp::detail::half_to_float : dp::detail::bf16_to_float;
  std::vector<uint16_t> buf(n);
  // Small integers are exact in both formats.
  for (size_t i = 0; i < n; ++i) buf[i] = to16(static_cast<float>(i % 16 + c.rank()));
  CHECK_OK(c.all_reduce(buf.data(), n, t, dp::ReduceOp::avg));
  const int w = c.size();
  for (size_t i = 0; i < n; ++i) {
    float want = static_cast<float>(i % 16) + static_cast<float>(w - 1) / 2.0f;
    CHECK(from16(buf[i]) == want, "%s avg element %zu is %g, want %g", half ? "f16" : "bf16", i,
          static_cast<double>(from16(buf[i])), static_cast<double>(want));
  }
  return true;
}

bool broadcast(dp::Communicator& c, size_t n, int root) {
  std::vector<double> buf(n, -1.0);
  if (c.rank() == root) {
    for (size_t i = 0; i < n; ++i) buf[i] = static_cast<double>(i) * 0.5 + root;
  }
  CHECK_OK(c.broadcast(buf.data(), n, dp::DType::f64, root));
  for (size_t i = 0; i < n; ++i) {
    CHECK(buf[i] == static_cast<double>(i) * 0.5 + root, "broadcast root %d element %zu", root, i);
  }
  return true;
}

bool all_gather(dp::Communicator& c, size_t n) {
  std::vector<int32_t> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<int32_t>(c.rank() * 1000003 + i);
  std::vector<int32_t> all(n * c.size(), -1);
  CHECK_OK(c.all_gather(mine.data(), all.data(), n, dp::DType::i32));
  for (int r = 0; r < c.size(); ++r) {
    for (size_t i = 0; i < n; ++i) {
      CHECK(all[r * n + i] == static_cast<int32_t>(r * 1000003 + i), "all_gather slot %d elem %zu",
            r, i);
    }
  }
  // In place: this rank's slot of the output is the input.
  std::vector<int32_t> inplace(n * c.size(), -1);
  for (size_t i = 0; i < n; ++i) inplace[c.rank() * n + i] = mine[i];
  CHECK_OK(c.all_gather(inplace.data() + c.rank() * n, inplace.data(), n, dp::DType::i32));
  CHECK(inplace == all, "in-place all_gather differs");
  return true;
}

bool async_overlap(dp::Communicator& c) {
  // Several handles in flight at once; results must match the sync path.
  constexpr int kOps = 4;
  constexpr size_t kN = 100'003;
  std::vector<std::vector<float>> bufs(kOps, std::vector<float>(kN));
  std::vector<std::unique_ptr<dp::Work>> works;
  for (int k = 0; k < kOps; ++k) {
    for (size_t i = 0; i < kN; ++i) bufs[k][i] = value(i, c.rank()) + static_cast<float>(k);
    auto w = c.all_reduce_async(bufs[k].data(), kN, dp::DType::f32, dp::ReduceOp::sum);
    CHECK(w.ok(), "all_reduce_async: %s", w.ok() ? "" : w.error().message.c_str());
    works.push_back(std::move(*w));
  }
  for (int k = kOps - 1; k >= 0; --k) CHECK_OK(works[k]->wait());
  const int w = c.size();
  for (int k = 0; k < kOps; ++k) {
    for (size_t i = 0; i < kN; ++i) {
      float want = w * (static_cast<float>(i % 1024) + k) + static_cast<float>(w * (w - 1) / 2);
      CHECK(bufs[k][i] == want, "async op %d element %zu", k, i);
    }
  }
  return true;
}

bool collectives(dp::Communicator& c) {
  const size_t sizes[] = {1, 2, 3, 7, 255, 1024, 4097, 65'537, 1'000'003, 16 * 1024 * 1024};
  for (size_t n : sizes) {
    if (!all_reduce_f32(c, n, dp::ReduceOp::sum)) return false;
    if (n < 2'000'000 && !all_reduce_f32(c, n, dp::ReduceOp::avg)) return false;
  }
  for (size_t n : {size_t{1}, size_t{1'001}, size_t{300'007}}) {
    if (!all_reduce_int<int32_t>(c, dp::DType::i32, n)) return false;
    if (!all_reduce_int<int64_t>(c, dp::DType::i64, n)) return false;
    if (!all_reduce_16(c, dp::DType::f16, n)) return false;
    if (!all_reduce_16(c, dp::DType::bf16, n)) return false;
  }
  for (int root = 0; root < c.size(); ++root) {
    if (!broadcast(c, 1, root) || !broadcast(c, 77'777, root)) return false;
  }
  if (!all_gather(c, 1) || !all_gather(c, 12'345)) return false;
  for (int i = 0; i < 20; ++i) CHECK_OK(c.barrier());
  if (!async_overlap(c)) return false;
  // Zero-length calls are valid no-ops.
  CHECK_OK(c.all_reduce(nullptr, 0, dp::DType::f32, dp::ReduceOp::sum));
  return true;
}

int long_all_reduce(dp::Communicator& c) {
  std::vector<float> buf(16 * 1024 * 1024, 1.0f);
  for (int iter = 0; iter < 100'000; ++iter) {
    auto r = c.all_reduce(buf.data(), buf.size(), dp::DType::f32, dp::ReduceOp::avg);
    if (!r) {
      std::printf("ERROR %s\n", r.error().message.c_str());
      std::fflush(stdout);
      return 3;
    }
    if (iter == 0) {
      std::printf("LOOPING pid %d\n", static_cast<int>(getpid()));
      std::fflush(stdout);
    }
  }
  return 0;
}

int stall(dp::Communicator& c) {
  if (c.rank() != 0) {
    std::printf("STALLING\n");
    std::fflush(stdout);
    for (;;) pause();  // the test kills this rank by pid
  }
  std::vector<float> buf(1024, 1.0f);
  auto r = c.all_reduce(buf.data(), buf.size(), dp::DType::f32, dp::ReduceOp::sum);
  if (r) return 0;
  std::printf("ERROR %s\n", r.error().message.c_str());
  std::fflush(stdout);
  return 3;
}

// The daemon lives as long as the step: the last rank starts its init
// DP_TEST_LATE_S seconds after the others, and after every rank has left
// (goodbye) and DP_TEST_GAP_S more seconds have passed, every rank inits again.
int lifetime() {
  const char* rank_env = std::getenv("RANK");
  const char* world_env = std::getenv("WORLD_SIZE");
  const int rank = rank_env ? std::atoi(rank_env) : 0;
  const int world = world_env ? std::atoi(world_env) : 1;
  const char* late = std::getenv("DP_TEST_LATE_S");
  const char* gap = std::getenv("DP_TEST_GAP_S");
  for (int round = 1; round <= 2; ++round) {
    // The waits are the scenario under test (a late task, a later init), not synchronisation.
    if (round == 1 && rank == world - 1 && late) sleep(static_cast<unsigned>(std::atoi(late)));
    if (round == 2 && gap) sleep(static_cast<unsigned>(std::atoi(gap)));
    auto comm = dp::init();
    if (!comm) {
      std::printf("ERROR init %d: %s\n", round, comm.error().message.c_str());
      return 2;
    }
    g_rank = (*comm)->rank();
    std::vector<float> v(1024, 1.0f);
    if (auto r = (*comm)->all_reduce(v.data(), v.size(), dp::DType::f32, dp::ReduceOp::sum); !r) {
      std::printf("ERROR init %d: all_reduce: %s\n", round, r.error().message.c_str());
      return 3;
    }
    if (v[0] != static_cast<float>(world)) {
      std::printf("ERROR init %d: all_reduce gave %g, expected %d\n", round, v[0], world);
      return 1;
    }
    std::printf("OK init %d rank %d of %d\n", round, rank, world);
    std::fflush(stdout);
  }
  return 0;
}

int linger(std::unique_ptr<dp::Communicator> c) {
  std::vector<float> v(1024, 1.0f);
  if (auto r = c->all_reduce(v.data(), v.size(), dp::DType::f32, dp::ReduceOp::sum); !r) {
    std::printf("ERROR all_reduce: %s\n", r.error().message.c_str());
    return 3;
  }
  const int rank = c->rank();
  c.reset();  // the goodbye
  const char* ms = std::getenv("DP_TEST_LINGER_MS");
  // The wait is the scenario under test (a program that outlives its goodbye).
  usleep(static_cast<useconds_t>((ms ? std::atoi(ms) : 1500) * 1000));
  std::printf("OK rank %d left, then exited\n", rank);
  return 0;
}

// A step that restarts in place (--dp-max-restarts): the first generation
// loops until the test kills a rank; the next one checks every collective
// and ends.
int restart(dp::Communicator& c) {
  const char* count = std::getenv("DP_RESTART_COUNT");
  const int generation = count ? std::atoi(count) : 0;
  if (generation == 0) return long_all_reduce(c);
  if (!collectives(c)) return 1;
  std::printf("OK rank %d of %d generation %d\n", c.rank(), c.size(), generation);
  return 0;
}

int priorities(dp::Communicator& c) {
  std::vector<float> v(1024, 1.0f);
  if (auto r = c.all_reduce(v.data(), v.size(), dp::DType::f32, dp::ReduceOp::sum); !r) {
    std::printf("ERROR all_reduce: %s\n", r.error().message.c_str());
    return 3;
  }
  const int mine = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  int lowered = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 4;
  while (const dirent* e = readdir(d)) {
    const int tid = std::atoi(e->d_name);
    if (tid > 0 && getpriority(PRIO_PROCESS, static_cast<id_t>(tid)) > mine) ++lowered;
  }
  closedir(d);
  std::printf("NICE main %d lowered %d\n", mine, lowered);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "collectives";
  if (mode == "lifetime") return lifetime();
  auto comm = dp::init();
  if (!comm) {
    std::printf("ERROR init: %s\n", comm.error().message.c_str());
    return 2;
  }
  g_rank = (*comm)->rank();
  if (mode == "long") return long_all_reduce(**comm);
  if (mode == "stall") return stall(**comm);
  if (mode == "restart") return restart(**comm);
  if (mode == "linger") return linger(std::move(*comm));
  if (mode == "priorities") return priorities(**comm);
  if (!collectives(**comm)) return 1;
  std::printf("OK rank %d of %d backend %s via %s\n", (*comm)->rank(), (*comm)->size(),
              dp::backend_name((*comm)->backend()), (*comm)->describe().c_str());
  return 0;
}
