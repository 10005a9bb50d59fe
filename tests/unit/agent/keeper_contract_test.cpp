// The keeper's and the agent's lines (keeper_contract.hpp) both ways.
#include "keeper_contract.hpp"

#include <gtest/gtest.h>

namespace dp::agent {
namespace {

using Kind = KeeperLine::Kind;

TEST(KeeperContract, EveryLineReadsBackAsWritten) {
  for (const KeeperLine& l :
       {KeeperLine{Kind::keeper, 1, 4242}, KeeperLine{Kind::started, 4243, 987654321},
        KeeperLine{Kind::exited, 9, 0}, KeeperLine{Kind::stopped, 0, 0},
        KeeperLine{Kind::start, -1, 2}, KeeperLine{Kind::start, 3, 1},
        KeeperLine{Kind::stop, 2000, 0}, KeeperLine{Kind::exit, 0, 0}}) {
    const std::string text = format_keeper_line(l);
    ASSERT_EQ(text.back(), '\n');
    const auto back = parse_keeper_line(std::string_view(text).substr(0, text.size() - 1));
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(back->kind, l.kind) << text;
    EXPECT_EQ(back->a, l.a) << text;
    EXPECT_EQ(back->b, l.b) << text;
  }
  EXPECT_EQ(format_keeper_line({Kind::start, 1, 2}), "start 1 2\n");
}

TEST(KeeperContract, AnythingElseIsNoLine) {
  for (const char* bad :
       {"", "keeper", "keeper 1", "keeper 1 2 3", "started x 1", "exited", "stopped 1", "begin 1 2",
        "exit now", "stop -5000000000000000000000", "keeper 1 +2"})
    EXPECT_FALSE(parse_keeper_line(bad)) << bad;
  EXPECT_FALSE(parse_keeper_line(std::string(kMaxKeeperLine + 1, 'x')));
}

}  // namespace
}  // namespace dp::agent
