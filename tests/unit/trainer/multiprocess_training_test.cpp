// dp-trainer as real processes over Gloo, wired through a real
// dp-rendezvousd (what srun --dp-world=auto does, minus Slurm):
// equivalence of world 2 x B with world 1 x 2B, and SIGTERM -> checkpoint ->
// --resume ending bit-for-bit where an uninterrupted run ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "checkpoint.hpp"
#include "process_group.hpp"

namespace dpt {
namespace {

using Clock = std::chrono::steady_clock;
const std::string kSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

// Small but real: the first 4096 Fashion-MNIST images, a 784-128-10 MLP.
std::vector<std::string> base_args() {
  return {"--device",    "cpu",      "--train-limit",
          "4096",        "--hidden", "128",
          "--epochs",    "2",        "--no-eval",
          "--lr",        "0.05",     "--warmup-steps",
          "10",          "--seed",   "5",
          "--bucket-kb", "64"};
}

struct World {
  dp::test::TempDir dir;
  std::optional<dp::test::Daemon> daemon;
  std::vector<dp::test::Child> kids;
};

void start(World& w, int world, const std::vector<std::string>& extra, const std::string& tag) {
  std::string err;
  if (world > 1) {
    w.daemon = dp::test::Daemon::start(DP_RENDEZVOUSD, world, kSecret, &err);
    ASSERT_TRUE(w.daemon.has_value()) << err;
  }
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env{
        {"RANK", std::to_string(r)},       {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(r)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
        {"OPENBLAS_NUM_THREADS", "1"},     {"DP_TIMEOUT_MS", "60000"}};
    if (world > 1) {
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = "29500";
      env["DP_BACKEND"] = "gloo";
      env["DP_RDV_ADDR"] = "127.0.0.1:" + std::to_string(w.daemon->port());
      env["DP_RDV_SECRET"] = kSecret;
    }
    std::vector<std::string> argv{DP_TRAINER};
    for (auto& a : base_args()) argv.push_back(a);
    for (auto& a : extra) argv.push_back(a);
    w.kids.push_back(dp::test::spawn(
        argv, env, w.dir.path() + "/" + tag + "-rank" + std::to_string(r) + ".log"));
  }
}

std::string logs(const World& w) {
  std::string s;
  for (auto& k : w.kids) s += "--- " + k.log + "\n" + dp::test::read_file(k.log);
  return s;
}

void finish_ok(World& w) {
  ASSERT_TRUE(dp::test::wait_all(w.kids, Clock::now() + std::chrono::seconds(240)))
      << "ranks did not finish in time\n"
      << logs(w);
  for (auto& k : w.kids)
    ASSERT_TRUE(WIFEXITED(*k.status) && WEXITSTATUS(*k.status) == 0) << logs(w);
}

std::vector<float> params_of(const std::string& checkpoint) {
  auto c = read_checkpoint(checkpoint);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  return c.ok() ? c->params : std::vector<float>{};
}

TEST(MultiprocessTraining, GlooWorldTwoBatchBEqualsWorldOneBatchTwoB) {
  World one, two;
  start(one, 1, {"--batch", "64", "--checkpoint", one.dir.path() + "/ck"}, "w1");
  start(two, 2, {"--batch", "32", "--checkpoint", two.dir.path() + "/ck"}, "w2");
  finish_ok(one);
  finish_ok(two);
  const auto a = params_of(one.dir.path() + "/ck"), b = params_of(two.dir.path() + "/ck");
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(double(a[i]) - b[i]));
  // Same samples per step, only fp32 summation order differs (see
  // distributed_training_test.cpp for the bound); 128 steps here.
  std::printf("max |w1 - w2| = %.3g over %zu parameters\n", diff, a.size());
  EXPECT_LT(diff, 1e-4);
}

TEST(MultiprocessTraining, SigtermCheckpointsAndResumeIsBitForBit) {
  World full;
  start(full, 2, {"--batch", "16", "--checkpoint", full.dir.path() + "/ck"}, "full");
  finish_ok(full);

  World cut;
  const std::string ck = cut.dir.path() + "/ck", metrics = cut.dir.path() + "/m.jsonl";
  start(cut, 2,
        {"--batch", "16", "--checkpoint", ck, "--checkpoint-every", "50", "--resume", "--log-every",
         "1", "--metrics", metrics},
        "cut");
  // Mid-epoch 1 (128 steps per epoch): pre-empt like Slurm, every task gets it.
  ASSERT_TRUE(
      dp::test::wait_for_text(metrics, "\"step\":60,", Clock::now() + std::chrono::seconds(120)))
      << logs(cut);
  for (auto& k : cut.kids) ASSERT_EQ(::kill(k.pid, SIGTERM), 0);
  finish_ok(cut);
  const std::string m = dp::test::read_file(metrics);
  ASSERT_NE(m.find("\"event\":\"stopped\""), std::string::npos)
      << "finished before SIGTERM arrived\n"
      << m;
  ASSERT_EQ(m.find("\"step\":256,"), std::string::npos);

  World again;
  start(again, 2, {"--batch", "16", "--checkpoint", ck, "--resume", "--log-every", "0"}, "resume");
  finish_ok(again);
  EXPECT_NE(dp::test::read_file(again.kids[0].log).find("resume: continuing at step"),
            std::string::npos)
      << logs(again);
  const auto a = params_of(full.dir.path() + "/ck"), b = params_of(ck);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "resumed run differs";
}

// Runs one trainer that must fail with exit status `want`; returns what it
// wrote (a test failure, and "", when it does not end within 30 s).
std::string failed_run(const std::vector<std::string>& args, const std::string& tag, int want) {
  World w;
  start(w, 1, args, tag);
  if (!dp::test::wait_all(w.kids, Clock::now() + std::chrono::seconds(30))) {
    ADD_FAILURE() << tag << ": the trainer did not end within 30 s";
    return {};
  }
  EXPECT_TRUE(WIFEXITED(*w.kids[0].status) && WEXITSTATUS(*w.kids[0].status) == want);
  return dp::test::read_file(w.kids[0].log);
}

TEST(MultiprocessTraining, BadOptionIsOneClearLineAndExit2) {
  const std::string out = failed_run({"--batch", "zero"}, "bad", 2);
  EXPECT_NE(out.find("--batch: invalid value 'zero'"), std::string::npos) << out;
}

TEST(MultiprocessTraining, MissingDataNamesTheFix) {
  const std::string out = failed_run({"--data-dir", "/nonexistent"}, "nodata", 1);
  EXPECT_NE(out.find("/nonexistent/train-images-idx3-ubyte.gz"), std::string::npos) << out;
  EXPECT_NE(out.find("--data-dir"), std::string::npos) << out;
}

}  // namespace
}  // namespace dpt
