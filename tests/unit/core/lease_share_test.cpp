// The per-user share of a node's leased ports (dp/lease_share.hpp), from
// plain counts: the step's own earlier leases never count, another step's
// do; a refusal names the cap, what the step needs and the fix. The lease
// files and their lock are spank_edge_test's (LeasePorts.*).
#include "dp/lease_share.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dp {
namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(LeaseShare, OtherStepsCountTheStepsOwnDoNot) {
  LeaseHolders held;
  held.owner_steps = {{"1.0", 2}, {"2.0", 1}};
  ShareAsk ask{4242, "2.0", 3, 1, "MASTER_PORT"};
  EXPECT_TRUE(check_lease_share(held, ask).ok()) << "2 others + 1 fit 3; 2.0's own lease aside";
  ask.count = 2;
  const auto r = check_lease_share(held, ask);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::unavailable);
  const std::string& m = r.error().message;
  EXPECT_TRUE(has(m, "uid 4242 already holds 2 leased ports on this node (steps 1.0 (2))")) << m;
  EXPECT_TRUE(has(m, "a user may hold 3 leased ports on a node (lease_share=")) << m;
  EXPECT_TRUE(has(m, "this step needs MASTER_PORT: end one of those steps first")) << m;
}

TEST(LeaseShare, AStepAloneOverTheShareIsToldToAskForFewer) {
  const auto r = check_lease_share({}, {7, "3.0", 3, 4, "MASTER_PORT and --dp-ports=3 (4 ports)"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(has(r.error().message,
                  "this step needs MASTER_PORT and --dp-ports=3 (4 ports): "
                  "ask for fewer with --dp-ports, or ask the admin to raise "
                  "lease_share="))
      << r.error().message;
  EXPECT_FALSE(has(r.error().message, "already holds"));
}

TEST(LeaseShare, NoCapNoRefusal) {
  LeaseHolders held;
  held.owner_steps = {{"1.0", 1000}};
  EXPECT_TRUE(check_lease_share(held, {1, "2.0", 0, 500, "MASTER_PORT"}).ok());
}

TEST(LeaseShare, HoldersMostPortsFirst) {
  LeaseHolders held;
  held.by_uid = {{1002, 1}, {1001, 9}, {-1, 2}};
  EXPECT_EQ(lease_holders_text(held),
            "uid 1001 (9 ports), an older release (2 ports), uid 1002 (1 port)");
  EXPECT_EQ(lease_holders_text({}), "");
}

}  // namespace
}  // namespace dp
