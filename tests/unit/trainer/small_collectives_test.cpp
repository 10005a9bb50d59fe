// The trainer's small collectives at any size: the scratch buffer grows to
// fit, and an all-gather's input and output never overlap.
#include "small_collectives.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cpu_ops.hpp"
#include "thread_communicator.hpp"

namespace dpt {
namespace {

// Runs fn(comm, ops, rank) on `world` ranks as threads.
template <class F>
void on_ranks(int world, F fn) {
  testing::ThreadGroup group(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      testing::ThreadCommunicator comm(group, r);
      auto ops = make_cpu_ops();
      fn(comm, *ops, r);
    });
  for (auto& t : threads) t.join();
}

TEST(SmallCollectives, AllGatherOfAnySizeReturnsEveryRanksValuesInOrder) {
  // 2 floats per rank is what the trainer gathers; 40 and 300 did not fit
  // the fixed buffer (an output at offset 32 overlapped or overran it).
  for (size_t n : {size_t{2}, size_t{40}, size_t{300}}) {
    const int world = 3;
    std::vector<std::vector<float>> got(world);
    on_ranks(world, [&](dp::Communicator& comm, Ops& ops, int rank) {
      SmallCollectives small(comm, ops);
      std::vector<float> mine(n);
      for (size_t i = 0; i < n; ++i)
        mine[i] = static_cast<float>(rank * 1000 + static_cast<int>(i));
      auto all = small.all_gather(mine);
      ASSERT_TRUE(all.ok()) << all.error().message;
      got[rank] = *all;
    });
    for (int rank = 0; rank < world; ++rank) {
      ASSERT_EQ(got[rank].size(), n * world) << "n=" << n;
      for (int r = 0; r < world; ++r)
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(got[rank][r * n + i], static_cast<float>(r * 1000 + static_cast<int>(i)))
              << "rank " << rank << " sees rank " << r << "'s value " << i << " wrong (n=" << n
              << ")";
    }
  }
}

TEST(SmallCollectives, AllReduceSumOfAnySizeAndAtWorldOne) {
  for (int world : {1, 2}) {
    on_ranks(world, [&](dp::Communicator& comm, Ops& ops, int rank) {
      SmallCollectives small(comm, ops);
      for (size_t n : {size_t{3}, size_t{500}}) {
        std::vector<float> v(n, static_cast<float>(rank + 1));
        ASSERT_TRUE(small.all_reduce_sum(v).ok());
        const float want = world == 1 ? 1.0f : 3.0f;
        for (float x : v) ASSERT_EQ(x, want) << "n=" << n;
      }
      auto all = small.all_gather({static_cast<float>(rank)});
      ASSERT_TRUE(all.ok());
      EXPECT_EQ(all->size(), static_cast<size_t>(world));
    });
  }
}

}  // namespace
}  // namespace dpt
