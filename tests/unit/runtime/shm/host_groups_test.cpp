// group_by_host: which ranks share memory and who leads each host, from the
// digests every rank reports; and the digests themselves.
#include <gtest/gtest.h>

#include "host_identity.hpp"

namespace {

using dp::detail::domain_digest;
using dp::detail::group_by_host;
using Digests = std::vector<std::array<uint64_t, 2>>;

Digests hosts(const std::vector<const char*>& names) {
  Digests d;
  for (const char* n : names) d.push_back(domain_digest(std::string("boot=x node=") + n));
  return d;
}

TEST(HostGroups, OneHost) {
  const auto d = hosts({"a", "a", "a"});
  for (int r = 0; r < 3; ++r) {
    auto g = group_by_host(d, r);
    EXPECT_TRUE(g.single_host());
    EXPECT_EQ(g.local_ranks, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(g.local_rank, r);
    EXPECT_EQ(g.leaders, std::vector<int>{0});
    EXPECT_EQ(g.leader_index, r == 0 ? 0 : -1);
    EXPECT_EQ(g.largest_host, 3);
  }
}

TEST(HostGroups, CyclicRanksOverTwoHostsOfUnequalSize) {
  // Slurm's cyclic distribution: ranks alternate between nodes.
  const auto d = hosts({"b", "a", "b", "a", "b"});
  auto g3 = group_by_host(d, 3);
  EXPECT_FALSE(g3.single_host());
  EXPECT_EQ(g3.local_ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(g3.local_rank, 1);
  EXPECT_EQ(g3.leaders, (std::vector<int>{0, 1}));
  EXPECT_EQ(g3.leader_index, -1);
  EXPECT_EQ(g3.largest_host, 3);
  auto g1 = group_by_host(d, 1);
  EXPECT_EQ(g1.local_rank, 0);
  EXPECT_EQ(g1.leader_index, 1);
  auto g4 = group_by_host(d, 4);
  EXPECT_EQ(g4.local_ranks, (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(g4.local_rank, 2);
}

TEST(HostGroups, OneRankPerHost) {
  const auto d = hosts({"a", "b", "c", "d"});
  auto g = group_by_host(d, 2);
  EXPECT_EQ(g.largest_host, 1);
  EXPECT_EQ(g.local_ranks, std::vector<int>{2});
  EXPECT_EQ(g.leaders, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(g.leader_index, 2);
}

TEST(HostGroups, DigestSeparatesEveryPartOfTheDomain) {
  const std::string base = dp::detail::shared_memory_domain();
  EXPECT_NE(base.find("boot="), std::string::npos);
  EXPECT_NE(base.find(" ipc="), std::string::npos);
  EXPECT_NE(base.find(" node="), std::string::npos);
  EXPECT_EQ(domain_digest(base), domain_digest(dp::detail::shared_memory_domain()));
  EXPECT_NE(domain_digest(base), domain_digest(base + "x"));
  EXPECT_NE(domain_digest("node=ab"), domain_digest("node=ba"));
}

}  // namespace
