#include "dp/master_port.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

TEST(ReservedPorts, FirstOfRangeOrList) {
  auto a = dp::first_reserved_port("12000-12003");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 12000);
  auto b = dp::first_reserved_port("12005,12007");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 12005);
  auto c = dp::first_reserved_port("");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->has_value());
  EXPECT_FALSE(dp::first_reserved_port("junk").ok());
}

TEST(PickPort, SkipsTakenPortsAndVisitsEachOnce) {
  std::set<int> tried;
  auto p = dp::pick_port(30000, 30009, 7, [&](int port) {
    EXPECT_TRUE(tried.insert(port).second) << "port tried twice: " << port;
    return port == 30002;
  });
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 30002);
  EXPECT_EQ(*tried.begin(), 30000);  // wrapped around from 30007
}

TEST(PickPort, ConcurrentStepsGetDifferentPorts) {
  // Two steps with the same seed (same hash) still get different ports
  // because the second finds the first's lease.
  std::set<int> leased;
  auto take = [&](int port) { return leased.insert(port).second; };
  auto a = dp::pick_port(30000, 30009, 42, take);
  auto b = dp::pick_port(30000, 30009, 42, take);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

TEST(PickPort, ExhaustedRangeSaysWhatToDo) {
  int calls = 0;
  auto p = dp::pick_port(30000, 30003, 0, [&](int) {
    ++calls;
    return false;
  });
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(calls, 4);
  EXPECT_NE(p.error().message.find("--dp-master-port"), std::string::npos);
}

}  // namespace
