#include "dp/master_port.hpp"
#include "dp/port_holders.hpp"

#include <gtest/gtest.h>
#include <netinet/tcp.h>

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

// The kernel's socket table names who holds a range (bound or listening),
// one count per port and uid; a connection's local port is no hold.
TEST(PortHolders, CountsBoundAndListeningPortsByUid) {
  dp::TcpSockets table;
  table.sockets = {
      {TCP_LISTEN, 20000, 1002, 1},      {TCP_CLOSE, 20001, 1002, 2},
      {TCP_ESTABLISHED, 20002, 1001, 3}, {TCP_LISTEN, 20000, 1002, 4},  // v6 beside v4
      {TCP_LISTEN, 8080, 0, 5},          {TCP_LISTEN, 20003, 0, 6},
  };
  const auto h = dp::port_holders(table, 20000, 20010);
  EXPECT_EQ(h.by_uid, (std::map<unsigned, int>{{1002, 2}, {0, 1}}));
  EXPECT_FALSE(h.partial);
  EXPECT_FALSE(h.time_wait);
  EXPECT_EQ(dp::holders_text(h), "uid 1002 (2 ports), uid 0 (1 port)");
  dp::TcpSockets tw;
  tw.sockets = {{TCP_TIME_WAIT, 20004, 0, 0}};
  EXPECT_TRUE(dp::port_holders(tw, 20000, 20010).time_wait) << "a connection in TIME_WAIT";
  EXPECT_TRUE(dp::port_holders(tw, 20000, 20010).by_uid.empty()) << "is nobody's hold";
  EXPECT_FALSE(dp::port_holders(tw, 20005, 20010).time_wait) << "outside the range";
  EXPECT_TRUE(dp::port_holders(dp::TcpSockets{}, 1, 65535).by_uid.empty());
}

// Any user can make the table long: a result from part of it says so.
TEST(PortHolders, APartialTableSaysSo) {
  dp::TcpSockets cut;
  cut.sockets = {{TCP_LISTEN, 20000, 1002, 1}};
  cut.partial = true;
  EXPECT_EQ(dp::holders_text(dp::port_holders(cut, 20000, 20010)),
            "uid 1002 (1 port) (the node's socket tables were too long to read whole: there may "
            "be others)");
}
