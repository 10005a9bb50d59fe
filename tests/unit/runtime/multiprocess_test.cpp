// N local processes of comm_worker form one Gloo world, through gloo's file
// store or a real dp-rendezvousd, and check every collective's result; and
// kill -9 of one rank must fail every other rank, naming it, within 10 s.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "process_group.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using dp::test::Child;

const std::string kSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

enum class Store { file, daemon };

std::map<std::string, std::string> rank_env(int rank, int world) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"DP_BACKEND", "gloo"},
          {"DP_TIMEOUT_MS", "60000"}};
}

std::vector<Child> start_world(int world, const std::string& mode, const std::string& dir,
                               const std::map<std::string, std::string>& store_env) {
  std::vector<Child> kids;
  for (int r = 0; r < world; ++r) {
    auto env = world == 1 ? std::map<std::string, std::string>{} : rank_env(r, world);
    for (const auto& [k, v] : store_env) env[k] = v;
    kids.push_back(dp::test::spawn({DP_COMM_WORKER, mode}, env, dir + "/rank" + std::to_string(r) + ".log"));
    EXPECT_GT(kids.back().pid, 0) << "could not start " << DP_COMM_WORKER;
  }
  return kids;
}

std::string logs(const std::vector<Child>& kids) {
  std::string all;
  for (size_t r = 0; r < kids.size(); ++r) {
    all += "--- rank " + std::to_string(r) + ":\n" + dp::test::read_file(kids[r].log);
  }
  return all;
}

class Collectives : public ::testing::TestWithParam<std::tuple<int, Store>> {};

TEST_P(Collectives, ExactResults) {
  const auto [world, store] = GetParam();
  dp::test::TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  std::optional<dp::test::Daemon> daemon;
  std::map<std::string, std::string> store_env;
  if (store == Store::daemon) {
    std::string err;
    daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, world, kSecret, &err);
    ASSERT_TRUE(daemon.has_value()) << err;
    store_env = {{"DP_RDV_ADDR", "127.0.0.1:" + std::to_string(daemon->port())},
                 {"DP_RDV_SECRET", kSecret}};
  } else {
    store_env = {{"DP_STORE_DIR", dir.path()}};
  }
  auto kids = start_world(world, "collectives", dir.path(), store_env);
  ASSERT_TRUE(dp::test::wait_all(kids, Clock::now() + std::chrono::seconds(240)))
      << "ranks did not finish in time\n" << logs(kids);
  for (size_t r = 0; r < kids.size(); ++r) {
    ASSERT_TRUE(WIFEXITED(*kids[r].status) && WEXITSTATUS(*kids[r].status) == 0)
        << "rank " << r << " failed\n" << logs(kids);
    std::string want = "OK rank " + std::to_string(r) + " of " + std::to_string(world) +
                       " backend " + (world == 1 ? "single" : "gloo");
    EXPECT_NE(dp::test::read_file(kids[r].log).find(want), std::string::npos) << logs(kids);
  }
}

INSTANTIATE_TEST_SUITE_P(
    World, Collectives,
    ::testing::Values(std::make_tuple(1, Store::file), std::make_tuple(2, Store::file),
                      std::make_tuple(3, Store::file), std::make_tuple(4, Store::file),
                      std::make_tuple(2, Store::daemon), std::make_tuple(3, Store::daemon),
                      std::make_tuple(4, Store::daemon)),
    [](const auto& info) {
      return std::to_string(std::get<0>(info.param)) + "ranks_" +
             (std::get<1>(info.param) == Store::file ? "filestore" : "daemon");
    });

class KillOneRank : public ::testing::TestWithParam<int> {};

TEST_P(KillOneRank, EveryOtherRankFailsNamingItWithin10s) {
  const int world = GetParam();
  const int victim = 1;
  dp::test::TempDir dir;
  std::string err;
  auto daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, world, kSecret, &err);
  ASSERT_TRUE(daemon.has_value()) << err;
  auto kids = start_world(world, "long", dir.path(),
                          {{"DP_RDV_ADDR", "127.0.0.1:" + std::to_string(daemon->port())},
                           {"DP_RDV_SECRET", kSecret}});
  for (auto& k : kids) {
    ASSERT_TRUE(dp::test::wait_for_text(k.log, "LOOPING", Clock::now() + std::chrono::seconds(60)))
        << logs(kids);
  }
  ASSERT_EQ(kill(kids[victim].pid, SIGKILL), 0);
  const auto killed_at = Clock::now();
  const bool in_time = dp::test::wait_all(kids, killed_at + std::chrono::seconds(10));
  const double secs = std::chrono::duration<double>(Clock::now() - killed_at).count();
  ASSERT_TRUE(in_time) << "survivors still running 10 s after kill -9 of rank " << victim << "\n"
                       << logs(kids);
  for (int r = 0; r < world; ++r) {
    if (r == victim) continue;
    const std::string out = dp::test::read_file(kids[r].log);
    EXPECT_TRUE(WIFEXITED(*kids[r].status) && WEXITSTATUS(*kids[r].status) == 3)
        << "rank " << r << " wait status " << *kids[r].status << "\n" << out;
    EXPECT_NE(out.find("ERROR"), std::string::npos) << out;
    EXPECT_NE(out.find("rank " + std::to_string(victim)), std::string::npos)
        << "rank " << r << "'s error does not name the dead rank:\n" << out;
  }
  RecordProperty("seconds_to_fail_all", std::to_string(secs));
  std::printf("all survivors failed %.2f s after kill -9 of rank %d\n", secs, victim);
}

INSTANTIATE_TEST_SUITE_P(World, KillOneRank, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

}  // namespace
