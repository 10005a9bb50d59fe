// The variables an NCCL rank gets for its hangs to be named: both names of
// each of PyTorch's settings, the agent's folder and RAS port, and nothing
// that the user set, nor the other name of a pair the user set.
#include "dp/nccl_watch.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace dp {
namespace {

std::map<std::string, std::string> env_of(const NcclWatchPlaces& p, std::set<std::string> user) {
  const auto env =
      nccl_watch_environment(p, [&](std::string_view n) { return user.count(std::string(n)) > 0; });
  return {env.begin(), env.end()};
}

TEST(NcclWatch, EveryNameOfEachSettingPointsAtTheAgentsPlaces) {
  const auto env = env_of({"/tmp/slurm-dp-fr.7.0.abc", 40123}, {});
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"},
                     {"TORCH_FR_BUFFER_SIZE", "2000"},
                     {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/slurm-dp-fr.7.0.abc/dump_rank"},
                     {"TORCH_FR_DUMP_TEMP_FILE", "/tmp/slurm-dp-fr.7.0.abc/dump_rank"},
                     {"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/tmp/slurm-dp-fr.7.0.abc/pipe_rank"},
                     {"TORCH_FR_DEBUG_INFO_PIPE_FILE", "/tmp/slurm-dp-fr.7.0.abc/pipe_rank"},
                     {"NCCL_RAS_ADDR", "127.0.0.1:40123"},
                 }));
  EXPECT_EQ(flight_dump_name(3), "dump_rank3");
  EXPECT_EQ(flight_pipe_name(3), "pipe_rank3.pipe");
}

TEST(NcclWatch, WhatTheUserSetIsLeftWhole) {
  // The user's buffer size (either name): neither name is set, the rest is.
  auto env = env_of({"/d", 1}, {"TORCH_FR_BUFFER_SIZE"});
  EXPECT_FALSE(env.count("TORCH_NCCL_TRACE_BUFFER_SIZE"));
  EXPECT_FALSE(env.count("TORCH_FR_BUFFER_SIZE"));
  EXPECT_EQ(env.at("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"), "/d/pipe_rank");
  // The user's dump file: the pipe would dump there, so neither is ours.
  env = env_of({"/d", 1}, {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE"});
  for (auto n : {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "TORCH_FR_DUMP_TEMP_FILE",
                 "TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "TORCH_FR_DEBUG_INFO_PIPE_FILE"})
    EXPECT_FALSE(env.count(n)) << n;
  EXPECT_EQ(env.at("TORCH_FR_BUFFER_SIZE"), "2000");
  env = env_of({"/d", 1}, {"TORCH_FR_DEBUG_INFO_PIPE_FILE", "NCCL_RAS_ADDR"});
  EXPECT_FALSE(env.count("TORCH_FR_DUMP_TEMP_FILE"));
  EXPECT_FALSE(env.count("NCCL_RAS_ADDR"));
  // No folder, no port: nothing.
  EXPECT_TRUE(env_of({"", 0}, {}).empty());
  EXPECT_EQ(env_of({"", 5}, {}).size(), 1u);
}

}  // namespace
}  // namespace dp
