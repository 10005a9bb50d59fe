#include "dp/master_port.hpp"
#include "dp/port_holders.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace {

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

// The kernel's socket tables name who holds a range (bound or listening),
// one count per port and uid; a connection's local port is no hold.
TEST(PortHolders, CountsBoundAndListeningPortsByUid) {
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 00000000:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002  0 1\n"
      "   1: 0100007F:4E21 00000000:0000 07 00000000:00000000 00:00000000 00000000  1002  0 2\n"
      "   2: 0100007F:4E22 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1001  0 3\n"
      "   3: 00000000:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002  0 4\n"
      "   4: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0  0 5\n"
      "garbage line\n"
      "   5: 00000000000000000000000000000000:4E23 00000000000000000000000000000000:0000 0A "
      "00000000:00000000 00:00000000 00000000     0  0 6\n";
  const auto h = dp::port_holders(tcp, 20000, 20010);
  EXPECT_EQ(h.by_uid, (std::map<unsigned, int>{{1002, 2}, {0, 1}}));
  EXPECT_FALSE(h.partial);
  EXPECT_FALSE(h.time_wait);
  EXPECT_EQ(dp::holders_text(h), "uid 1002 (2 ports), uid 0 (1 port)");
  const std::string tw =
      "   0: 0100007F:4E24 0100007F:1F90 06 00000000:00000000 03:00000F9E 00000000     0  0 0\n";
  EXPECT_TRUE(dp::port_holders(tw, 20000, 20010).time_wait) << "a connection in TIME_WAIT";
  EXPECT_TRUE(dp::port_holders(tw, 20000, 20010).by_uid.empty()) << "is nobody's hold";
  EXPECT_FALSE(dp::port_holders(tw, 20005, 20010).time_wait) << "outside the range";
  EXPECT_TRUE(dp::port_holders("", 1, 65535).by_uid.empty());
}

// Any user can make the tables long: at most max_lines lines are parsed,
// and a result from part of them says so.
TEST(PortHolders, ReadsAtMostItsLinesAndSaysWhenPartial) {
  const std::string line =
      "   0: 00000000:4E20 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002  0 1\n";
  const std::string other =
      "   1: 00000000:4E21 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1003  0 2\n";
  std::string tcp = "header\n" + line;
  for (int i = 0; i < 100; ++i) tcp += other;
  const auto cut = dp::port_holders(tcp, 20000, 20010, false, 2);
  EXPECT_EQ(cut.by_uid, (std::map<unsigned, int>{{1002, 1}})) << "only the first 2 lines";
  EXPECT_TRUE(cut.partial);
  EXPECT_EQ(dp::holders_text(cut),
            "uid 1002 (1 port) (the node's socket tables were too long to read whole: there may "
            "be others)");
  const auto whole = dp::port_holders(tcp, 20000, 20010, false, 102);
  EXPECT_FALSE(whole.partial) << "exactly max_lines lines is whole";
  EXPECT_EQ(whole.by_uid.size(), 2u);
  EXPECT_TRUE(dp::port_holders(tcp, 20000, 20010, true).partial) << "the reader cut it";
}
