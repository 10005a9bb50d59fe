// N local processes of comm_worker form one Gloo world, through gloo's file
// store or a real dp-rendezvousd, with all_reduce through shared memory (all
// ranks share this host) or TCP (DP_SHM=off), and check every collective's
// result; kill -9 of one rank must fail every other rank, naming it, within
// 10 s; a rank that stops calling collectives makes the others time out,
// naming it; and no shared-memory segment outlives start-up.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "dp/unique_fd.hpp"
#include "process_group.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using dp::UniqueDir;
using dp::test::Child;

const std::string kSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

enum class Store { file, daemon };
enum class Transport { shm, tcp };

// A DP_JOB_ID no other test uses: shared-memory segment names carry it.
std::string unique_job_id() {
  static int n = 0;
  return "mptest" + std::to_string(getpid()) + "x" + std::to_string(n++);
}

// Entries of /dev/shm whose name contains `text`.
std::vector<std::string> shm_entries(const std::string& text) {
  std::vector<std::string> found;
  UniqueDir d("/dev/shm");
  while (const dirent* e = d ? d.next() : nullptr)
    if (std::string(e->d_name).find(text) != std::string::npos) found.push_back(e->d_name);
  return found;
}

std::map<std::string, std::string> transport_env(Transport t, const std::string& job) {
  return {{"DP_SHM", t == Transport::shm ? "auto" : "off"}, {"DP_JOB_ID", job}};
}

std::string via(int world, Transport t) {
  if (world == 1) return " via single, no peers";
  if (t == Transport::tcp) return " via gloo over tcp\n";
  return " via gloo over tcp, all_reduce through shared memory (" + std::to_string(world) +
         " ranks on one host)";
}

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

// nodes: SLURMD_NODENAME per rank, as ranks on several nodes of a test
// cluster on one machine see it; empty: unset.
std::vector<Child> start_world(int world, const std::string& mode, const std::string& dir,
                               const std::map<std::string, std::string>& store_env,
                               const std::vector<std::string>& nodes = {}) {
  std::vector<Child> kids;
  for (int r = 0; r < world; ++r) {
    auto env = world == 1 ? std::map<std::string, std::string>{} : rank_env(r, world);
    for (const auto& [k, v] : store_env) env[k] = v;
    if (!nodes.empty()) env["SLURMD_NODENAME"] = nodes[static_cast<size_t>(r)];
    kids.push_back(
        dp::test::spawn({DP_COMM_WORKER, mode}, env, dir + "/rank" + std::to_string(r) + ".log"));
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

class Collectives : public ::testing::TestWithParam<std::tuple<int, Store, Transport>> {};

TEST_P(Collectives, ExactResults) {
  const auto [world, store, transport] = GetParam();
  const std::string job = unique_job_id();
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
  for (const auto& [k, v] : transport_env(transport, job)) store_env[k] = v;
  auto kids = start_world(world, "collectives", dir.path(), store_env);
  ASSERT_TRUE(dp::test::wait_all(kids, Clock::now() + std::chrono::seconds(240)))
      << "ranks did not finish in time\n"
      << logs(kids);
  for (size_t r = 0; r < kids.size(); ++r) {
    ASSERT_TRUE(WIFEXITED(*kids[r].status) && WEXITSTATUS(*kids[r].status) == 0)
        << "rank " << r << " failed\n"
        << logs(kids);
    std::string want = "OK rank " + std::to_string(r) + " of " + std::to_string(world) +
                       " backend " + (world == 1 ? "single" : "gloo") + via(world, transport);
    EXPECT_NE(dp::test::read_file(kids[r].log).find(want), std::string::npos) << want << "\n"
                                                                              << logs(kids);
  }
  EXPECT_TRUE(shm_entries(job).empty()) << "left in /dev/shm: " << shm_entries(job).front();
}

INSTANTIATE_TEST_SUITE_P(World, Collectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values(Store::file, Store::daemon),
                                            ::testing::Values(Transport::shm, Transport::tcp)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  (std::get<1>(info.param) == Store::file ? "filestore"
                                                                          : "daemon") +
                                  (std::get<2>(info.param) == Transport::shm ? "_shm" : "_tcp");
                         });

// Gloo's network thread polls while a message waits for its receiver; it
// runs DP_GLOO_LOOP_NICE (default 19) steps below the rank's own threads so
// that on a rank confined to one CPU it does not hold off the thread it
// waits for (bench/allreduce). The rank's own threads keep their priority.
TEST(GlooLoop, RunsBelowTheRanksOwnThreadsAsConfigured) {
  const int own = getpriority(PRIO_PROCESS, 0);
  if (own > 10) GTEST_SKIP() << "this test runs at nice " << own << ": no room below it";
  for (const char* nice : {"", "0", "5"}) {
    SCOPED_TRACE(std::string("DP_GLOO_LOOP_NICE=") + nice);
    dp::test::TempDir dir;
    ASSERT_FALSE(dir.path().empty());
    auto env = transport_env(Transport::tcp, unique_job_id());
    env["DP_STORE_DIR"] = dir.path();
    if (*nice) env["DP_GLOO_LOOP_NICE"] = nice;
    auto kids = start_world(2, "priorities", dir.path(), env);
    ASSERT_TRUE(dp::test::wait_all(kids, Clock::now() + std::chrono::seconds(60))) << logs(kids);
    for (const auto& k : kids) {
      ASSERT_TRUE(WIFEXITED(*k.status) && WEXITSTATUS(*k.status) == 0) << logs(kids);
      const std::string want =
          "NICE main " + std::to_string(own) + " lowered " + (std::string(nice) == "0" ? "0" : "1");
      EXPECT_NE(dp::test::read_file(k.log).find(want), std::string::npos) << want << "\n"
                                                                          << logs(kids);
    }
  }
}

// Ranks on several Slurm nodes (of one machine, as the test cluster runs
// them): each node's ranks share memory and the nodes' leaders join them over
// TCP; with one rank per node, all_reduce is plain TCP. Results stay exact.
struct NodesCase {
  std::vector<std::string> nodes;
  std::string via;
};

class AcrossNodes : public ::testing::TestWithParam<NodesCase> {};

TEST_P(AcrossNodes, ExactResults) {
  const auto& [nodes, want_via] = GetParam();
  const int world = static_cast<int>(nodes.size());
  dp::test::TempDir dir;
  auto kids = start_world(world, "collectives", dir.path(), {{"DP_STORE_DIR", dir.path()}}, nodes);
  ASSERT_TRUE(dp::test::wait_all(kids, Clock::now() + std::chrono::seconds(240))) << logs(kids);
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(WIFEXITED(*kids[r].status) && WEXITSTATUS(*kids[r].status) == 0) << logs(kids);
    EXPECT_NE(dp::test::read_file(kids[r].log).find(want_via), std::string::npos)
        << want_via << "\n"
        << logs(kids);
  }
}

const char* const kTwoHosts =
    " via gloo over tcp, all_reduce through shared memory within each of 2 hosts, then tcp between "
    "them";

INSTANTIATE_TEST_SUITE_P(Layouts, AcrossNodes,
                         ::testing::Values(NodesCase{{"a", "b", "c"}, " via gloo over tcp\n"},
                                           NodesCase{{"a", "a", "b"}, kTwoHosts},
                                           NodesCase{{"a", "b", "a", "b"}, kTwoHosts},
                                           NodesCase{{"a", "a", "b", "b", "b"}, kTwoHosts}),
                         [](const auto& info) {
                           std::string name;
                           for (const auto& n : info.param.nodes) name += n;
                           return name;
                         });

// A rank that stops calling collectives: the others' all_reduce fails at
// DP_TIMEOUT_MS, naming it, instead of waiting for ever.
TEST(SharedMemory, StalledRankTimesOutNamingIt) {
  dp::test::TempDir dir;
  auto kids = start_world(2, "stall", dir.path(),
                          {{"DP_STORE_DIR", dir.path()}, {"DP_TIMEOUT_MS", "1500"}});
  std::vector<Child> waiting{kids[0]};
  const bool in_time = dp::test::wait_all(waiting, Clock::now() + std::chrono::seconds(20));
  kill(kids[1].pid, SIGKILL);
  std::vector<Child> stalled{kids[1]};
  dp::test::wait_all(stalled, Clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(in_time) << "rank 0 still waiting 20 s after a 1.5 s timeout\n" << logs(kids);
  const std::string out = dp::test::read_file(kids[0].log);
  EXPECT_TRUE(WIFEXITED(*waiting[0].status) && WEXITSTATUS(*waiting[0].status) == 3) << out;
  EXPECT_NE(out.find("timed out waiting for rank 1 on this host"), std::string::npos) << out;
}

struct KillCase {
  int world;
  Store store;
  Transport transport;
  std::vector<std::string> nodes = {};  // SLURMD_NODENAME per rank
  // Without a daemon, ranks on other hosts see a broken connection, not who
  // broke it: only the victim's host can name it.
  bool all_name_victim = true;
};

class KillOneRank : public ::testing::TestWithParam<KillCase> {};

TEST_P(KillOneRank, EveryOtherRankFailsNamingItWithin10s) {
  const auto& [world, store, transport, nodes, all_name_victim] = GetParam();
  const int victim = 1;
  const std::string job = unique_job_id();
  dp::test::TempDir dir;
  std::string err;
  std::optional<dp::test::Daemon> daemon;
  std::map<std::string, std::string> env = transport_env(transport, job);
  if (store == Store::daemon) {
    daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, world, kSecret, &err);
    ASSERT_TRUE(daemon.has_value()) << err;
    env["DP_RDV_ADDR"] = "127.0.0.1:" + std::to_string(daemon->port());
    env["DP_RDV_SECRET"] = kSecret;
  } else {
    env["DP_STORE_DIR"] = dir.path();
  }
  auto kids = start_world(world, "long", dir.path(), env, nodes);
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
        << "rank " << r << " wait status " << *kids[r].status << "\n"
        << out;
    EXPECT_NE(out.find("ERROR"), std::string::npos) << out;
    if (all_name_victim || nodes.empty() || nodes[static_cast<size_t>(r)] == nodes[victim]) {
      EXPECT_NE(out.find("rank " + std::to_string(victim)), std::string::npos)
          << "rank " << r << "'s error does not name the dead rank:\n"
          << out;
    }
  }
  RecordProperty("seconds_to_fail_all", std::to_string(secs));
  std::printf("all survivors failed %.2f s after kill -9 of rank %d\n", secs, victim);
  EXPECT_TRUE(shm_entries(job).empty()) << "left in /dev/shm: " << shm_entries(job).front();
}

// Without a daemon only the shared-memory path can name the dead rank (gloo's
// TCP errors name an address): it watches its peers' processes.
INSTANTIATE_TEST_SUITE_P(
    World, KillOneRank,
    ::testing::Values(
        KillCase{2, Store::daemon, Transport::shm}, KillCase{4, Store::daemon, Transport::shm},
        KillCase{2, Store::daemon, Transport::tcp}, KillCase{4, Store::daemon, Transport::tcp},
        KillCase{2, Store::file, Transport::shm}, KillCase{4, Store::file, Transport::shm},
        KillCase{4, Store::daemon, Transport::shm, {"a", "a", "b", "b"}},
        KillCase{4, Store::file, Transport::shm, {"a", "a", "b", "b"}, false}),
    [](const auto& info) {
      std::string name = std::to_string(info.param.world) + "ranks_" +
                         (info.param.store == Store::file ? "filestore" : "daemon") +
                         (info.param.transport == Transport::shm ? "_shm" : "_tcp");
      if (!info.param.nodes.empty()) name += "_2hosts";
      return name;
    });

}  // namespace
