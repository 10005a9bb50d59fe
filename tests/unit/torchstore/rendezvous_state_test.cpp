// torchrun's rendezvous state as PyTorch 1.13, 2.6 and 2.14 write it
// (tests/fixtures/torchrun_state, made by its make.py in each lane's root):
// the launchers and their heartbeats read, one launcher's heartbeat aged in
// place, the writer of a state told by the heartbeat it moved, bad values named.
#include "dp/torchstore/rendezvous_state.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace dp::torchstore {
namespace {

std::string fixture(const std::string& version) {
  std::ifstream in(std::string(DP_TORCHRUN_STATE_FIXTURES) + "/torch-" + version + ".b64");
  std::stringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

class RendezvousStateOf : public ::testing::TestWithParam<const char*> {};

TEST_P(RendezvousStateOf, NamesEveryLauncherAndItsHeartbeat) {
  const std::string value = fixture(GetParam());
  ASSERT_FALSE(value.empty());
  auto st = read_rendezvous_state(value);
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_EQ(st->launchers.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const Launcher& l = st->launchers[static_cast<size_t>(i)];
    EXPECT_EQ(l.name(), "n" + std::to_string(i) + ".cluster:" + std::to_string(4000 + i));
    ASSERT_EQ(l.heartbeat.size(), 10u);
    EXPECT_EQ(st->pickle.substr(l.heartbeat_at, 10), l.heartbeat);
  }
  // 0, 1 and 2 s old: each older than the one before.
  EXPECT_GT(st->launchers[0].heartbeat, st->launchers[1].heartbeat);
  EXPECT_GT(st->launchers[1].heartbeat, st->launchers[2].heartbeat);
}

TEST_P(RendezvousStateOf, AgesOneLaunchersHeartbeatInPlace) {
  auto st = read_rendezvous_state(fixture(GetParam()));
  ASSERT_TRUE(st) << st.error().message;
  int expired = -1;
  const std::string edited = with_heartbeats_expired(*st, {"n1.cluster:4001"}, expired);
  EXPECT_EQ(expired, 1);
  EXPECT_EQ(edited.size(), fixture(GetParam()).size());
  auto after = read_rendezvous_state(edited);
  ASSERT_TRUE(after) << after.error().message;
  ASSERT_EQ(after->launchers.size(), 3u);
  EXPECT_EQ(after->launchers[0].heartbeat, st->launchers[0].heartbeat);
  EXPECT_EQ(after->launchers[1].heartbeat, std::string("\x07\xd0\x01\x01\0\0\0\0\0\0", 10));
  EXPECT_EQ(after->launchers[2].heartbeat, st->launchers[2].heartbeat);
  // Nothing else of the pickle changed.
  std::string a = st->pickle, b = after->pickle;
  a.replace(st->launchers[1].heartbeat_at, 10, 10, 'x');
  b.replace(st->launchers[1].heartbeat_at, 10, 10, 'x');
  EXPECT_EQ(a, b);
  // A name no launcher has changes nothing.
  EXPECT_EQ(with_heartbeats_expired(*st, {"n9.cluster:4001"}, expired), fixture(GetParam()));
  EXPECT_EQ(expired, 0);
}

TEST_P(RendezvousStateOf, TellsTheWriterByTheHeartbeatItMoved) {
  auto now = read_rendezvous_state(fixture(GetParam()));
  ASSERT_TRUE(now) << now.error().message;
  int expired = 0;
  auto before = read_rendezvous_state(with_heartbeats_expired(*now, {"n2.cluster:4002"}, expired));
  ASSERT_TRUE(before);
  const auto moved = heartbeats_moved(*before, *now);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].name(), "n2.cluster:4002");
  EXPECT_TRUE(heartbeats_moved(*now, *now).empty());
  EXPECT_TRUE(heartbeats_moved(*now, *before).empty());  // aged is no heartbeat
  EXPECT_EQ(heartbeats_moved(RendezvousState{}, *now).size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(PyTorch, RendezvousStateOf, ::testing::Values("1.13", "2.6", "2.14"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '.') c = '_';
                           return n;
                         });

TEST(RendezvousState, OnlyTheStatesOwnKey) {
  EXPECT_TRUE(is_rendezvous_state_key("torch.rendezvous.slurm-dp"));
  EXPECT_TRUE(is_rendezvous_state_key("/torch.rendezvous.slurm-dp"));  // as torchrun sends it
  EXPECT_FALSE(is_rendezvous_state_key("torch.rendezvous."));
  EXPECT_FALSE(is_rendezvous_state_key("/torch.rendezvous.slurm-dp.0/MASTER_ADDR"));
  EXPECT_FALSE(is_rendezvous_state_key("init/"));
}

TEST(RendezvousState, NamesWhatIsNotAState) {
  auto sentinel = read_rendezvous_state("Y2FuaW1hZGFt");  // torchrun's null sentinel
  ASSERT_TRUE(sentinel) << sentinel.error().message;
  EXPECT_TRUE(sentinel->launchers.empty());
  for (const char* bad : {"not base64!", "abc", "AAAA", "gARLAS4=" /* pickle of 1 */}) {
    auto st = read_rendezvous_state(bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_NE(st.error().message.find("torchrun's rendezvous state"), std::string::npos);
  }
  // Cut anywhere: named, never read past its end.
  const std::string whole = fixture("2.14");
  for (size_t n = 4; n < whole.size(); n += 4)
    EXPECT_FALSE(read_rendezvous_state(whole.substr(0, n)));
}

}  // namespace
}  // namespace dp::torchstore
