// Node agents against the real dp-rendezvousd binary: a node's
// connection speaks for its ranks beside a rank that connects directly, and
// a node whose connection drops fails the others naming the node.
#include <gtest/gtest.h>

#include <thread>

#include "daemon_process.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

proto::Request barrier_request(uint64_t id, const std::vector<int32_t>& ranks) {
  proto::Request b;
  b.set_id(id);
  b.mutable_barrier()->set_name("start");
  b.mutable_barrier()->set_timeout_ms(10'000);
  for (int32_t r : ranks) b.mutable_barrier()->add_ranks(r);
  return b;
}

// The next reply to a request (keepalive pushes skipped).
std::optional<proto::Response> reply(RawConn& c) {
  for (;;) {
    auto r = c.read_response();
    if (!r || r->id() != 0 || r->code() != proto::OK) return r;
  }
}

TEST(NodeAgent, ANodeFoldsItsRanksAndItsLossNamesTheNode) {
  DaemonProcess d(3, {"--nodes", "2"});
  ASSERT_TRUE(d.ready());
  std::optional<RawConn> node;
  node.emplace(d.port());
  ASSERT_TRUE(node->node_hello({0, 1}, "nodehost"));
  auto c2 = RendezvousClient::connect(d.client_options(2, 3));
  ASSERT_TRUE(c2.ok()) << c2.error().message;
  auto st = (*c2)->stats();
  ASSERT_TRUE(st.ok());
  EXPECT_NE(st->text.find("ranks_connected 3\n"), std::string::npos) << st->text;
  EXPECT_NE(st->text.find("nodes_connected 1\n"), std::string::npos) << st->text;

  ASSERT_TRUE(node->send_request(barrier_request(7, {0, 1})));
  ASSERT_TRUE((*c2)->barrier("start", milliseconds(10'000)).ok());
  auto folded = reply(*node);
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->id(), 7u);
  EXPECT_EQ(folded->code(), proto::OK);

  // The node's connection drops while its ranks run: the direct rank's pending call fails.
  PendingCall blocked([&] { return (*c2)->barrier("never", milliseconds(30'000)); });
  ASSERT_TRUE(daemon_holds_a_pending_call(**c2));
  const auto dropped_at = Clock::now();
  node.reset();  // closes the socket
  blocked.join();
  ASSERT_TRUE(blocked.failed.has_value());
  EXPECT_EQ(blocked.failed->code, Errc::aborted);
  EXPECT_NE(blocked.failed->message.find(
                "the node agent on host nodehost (ranks 0-1) lost its connection"),
            std::string::npos)
      << blocked.failed->message;
  EXPECT_LT(blocked.failed_at - dropped_at, milliseconds(1'000));
}

}  // namespace
}  // namespace dp::test
