// The NCCL backend without a GPU: error mapping, the unique-ID round trip
// through a real dp-rendezvousd, and failing at once with no CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "dp/nccl_roots.hpp"
#include "nccl_module.hpp"
#include "nccl_support.hpp"
#include "process_group.hpp"

namespace {

const std::string kSecret = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

class NoPhases final : public dp::detail::NcclPhases {
 public:
  void phase(const std::string&) override {}
};

// Rank `rank` of `world`'s store through the test's daemon.
dp::Result<dp::detail::NcclStore> open_store(int rank, int world, const dp::test::Daemon& daemon) {
  dp::Context ctx;
  ctx.rank = rank;
  ctx.world_size = world;
  ctx.rdv_addr = "127.0.0.1:" + std::to_string(daemon.port());
  ctx.secret = kSecret;
  return dp::detail::open_nccl_store(ctx, std::chrono::seconds(20));
}

TEST(NcclErrors, MapToOurCodesWithAFix) {
  auto e = dp::detail::nccl_error(ncclUnhandledCudaError, "ncclCommInitRank");
  EXPECT_EQ(e.code, dp::Errc::unavailable);
  EXPECT_NE(e.message.find("ncclCommInitRank"), std::string::npos);
  EXPECT_NE(e.message.find("DP_BACKEND=gloo"), std::string::npos);
  EXPECT_EQ(dp::detail::nccl_error(ncclSystemError, "x").code, dp::Errc::connection);
  EXPECT_EQ(dp::detail::nccl_error(ncclRemoteError, "x").code, dp::Errc::connection);
  EXPECT_EQ(dp::detail::nccl_error(ncclInvalidArgument, "x").code, dp::Errc::invalid_argument);
  EXPECT_EQ(dp::detail::nccl_error(ncclInvalidUsage, "x").code, dp::Errc::invalid_argument);
  EXPECT_EQ(dp::detail::nccl_error(ncclInternalError, "x").code, dp::Errc::internal);
  EXPECT_EQ(dp::detail::nccl_error(ncclInProgress, "x").code, dp::Errc::timeout);
}

TEST(NcclErrors, NoDeviceHereFailsAtOnceNamingCuda) {
  if (dp::detail::nccl_cuda_devices() > 0)
    GTEST_SKIP() << "a CUDA device is visible; this checks the no-GPU path";
  dp::Context ctx;
  ctx.world_size = 2;
  ctx.rdv_addr = "127.0.0.1:1";  // never contacted: the device check comes first
  ctx.secret = kSecret;
  const auto t0 = std::chrono::steady_clock::now();
  NoPhases phases;
  const dp::detail::NcclHost host{&dp::detail::open_nccl_store, &phases, 128};
  auto c = dp::detail::make_nccl_backend(ctx, std::chrono::seconds(30), host);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, dp::Errc::unavailable);
  EXPECT_NE(c.error().message.find("no usable CUDA device"), std::string::npos)
      << c.error().message;
  EXPECT_LT(took, std::chrono::seconds(2));
}

TEST(NcclId, RoundTripThroughTheDaemon) {
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  std::string err;
  auto daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, 2, kSecret, &err);
  ASSERT_TRUE(daemon.has_value()) << err;
  ncclUniqueId ids[2];
  dp::Result<void> outcome[2] = {dp::Result<void>(), dp::Result<void>()};
  auto rank_main = [&](int rank) {
    auto js = open_store(rank, 2, *daemon);
    if (!js) {
      outcome[rank] = js.error();
      return;
    }
    auto id =
        dp::detail::exchange_nccl_ids(*js->store, js->publish_once, rank, 2, 1, "dp/nccl/test/id");
    if (!id) {
      outcome[rank] = id.error();
    } else {
      ids[rank] = id->at(0);
    }
    js->goodbye();
  };
  std::thread r1(rank_main, 1);  // the fetcher first: it must block until rank 0 publishes
  std::thread r0(rank_main, 0);
  r0.join();
  r1.join();
  ASSERT_TRUE(outcome[0].ok()) << outcome[0].error().message;
  ASSERT_TRUE(outcome[1].ok()) << outcome[1].error().message;
  EXPECT_EQ(std::memcmp(ids[0].internal, ids[1].internal, sizeof(ids[0].internal)), 0);
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_NE(std::memcmp(ids[0].internal, zero.internal, sizeof(zero.internal)), 0);
}

// NCCL 2.23+'s start from several roots: 5 ranks, 2 per root, so 3 IDs
// created by ranks 0, 2 and 4 (NCCL's segments 0-1, 2-3, 4); every rank gets
// the same list in the same order, each ID the one its root created.
TEST(NcclId, SeveralRootsGiveEveryRankTheSameOrderedList) {
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  constexpr int kWorld = 5, kRoots = 3;
  std::string err;
  auto daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, kWorld, kSecret, &err);
  ASSERT_TRUE(daemon.has_value()) << err;
  std::vector<std::vector<ncclUniqueId>> lists(kWorld);
  std::vector<dp::Result<void>> outcome(kWorld, dp::Result<void>());
  auto rank_main = [&](int rank) {
    auto js = open_store(rank, kWorld, *daemon);
    if (!js) {
      outcome[rank] = js.error();
      return;
    }
    auto ids = dp::detail::exchange_nccl_ids(*js->store, js->publish_once, rank, kWorld, kRoots,
                                             "dp/nccl/test/ids");
    if (ids) lists[rank] = *ids;
    else outcome[rank] = ids.error();
    // A root finds the ID it published at its own index of the list.
    if (const int mine = dp::nccl_root_index(rank, kWorld, kRoots); ids && mine > 0) {
      const auto own = js->store->get("dp/nccl/test/ids/" + std::to_string(mine));
      if (own.size() != sizeof(ncclUniqueId) ||
          std::memcmp(own.data(), &(*ids)[mine], sizeof(ncclUniqueId)) != 0)
        outcome[rank] =
            dp::make_error(dp::Errc::internal, "its ID is not at index " + std::to_string(mine));
    }
    js->goodbye();
  };
  std::vector<std::thread> ranks;
  for (int r = kWorld - 1; r >= 0; --r) ranks.emplace_back(rank_main, r);  // readers first
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_TRUE(outcome[r].ok()) << "rank " << r << ": " << outcome[r].error().message;
    ASSERT_EQ(lists[r].size(), static_cast<size_t>(kRoots)) << "rank " << r;
    EXPECT_EQ(std::memcmp(lists[r].data(), lists[0].data(), kRoots * sizeof(ncclUniqueId)), 0)
        << "rank " << r << " got another list";
  }
  for (int i = 0; i < kRoots; ++i)
    for (int j = i + 1; j < kRoots; ++j)
      EXPECT_NE(std::memcmp(&lists[0][i], &lists[0][j], sizeof(ncclUniqueId)), 0)
          << "IDs " << i << " and " << j << " are equal";
}

}  // namespace
