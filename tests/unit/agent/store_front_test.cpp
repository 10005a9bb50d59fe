// The node's PyTorch store (store_front.hpp) between TCPStore clients and the
// real broker, without sockets: node agents' cores and the daemon's broker
// exchange frames through queues the test delivers, so requests can be held
// in flight on purpose. Answers are checked against torchstore's reference
// store (PyTorch's own server semantics), and the daemon's work per node
// against the folding the front promises.
#include "store_front.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "broker.hpp"
#include "dp/torchstore/reply.hpp"
#include "dp/torchstore/request.hpp"
#include "dp/torchstore/store_model.hpp"

namespace dp::agent {
namespace {

namespace ts = torchstore;
using Req = ts::Request;
using ts::Op;

const std::string kStoreSecret(64, 'a');
const std::string kNonce(32, 'n');

struct World;

// One node: its agent's core on the daemon link, its store front, and what
// its clients received.
struct Node : AgentOutbox, StoreOutbox {
  Node(World& w, ConnId link, std::vector<int32_t> ranks, int world_size, size_t upstream_frame);
  void to_rank(ConnId, const proto::Response&) override {}
  void close_rank(ConnId) override {}
  void to_daemon(const proto::Request& r) override;
  void to_client(ConnId c, std::string_view bytes) override { got[c] += bytes; }
  void close_client(ConnId c, const std::string& why) override { closed[c] = why; }
  void send_soon() override { due = true; }

  World& world;
  ConnId link;
  AgentCore core;
  StoreFront front;
  std::map<ConnId, std::string> got;
  std::map<ConnId, std::string> closed;
  bool due = false;  // the front asked for send_due
};

struct World : daemon::Outbox {
  // limits: the daemon's; upstream_frame: the largest frame the fronts send it.
  explicit World(int nodes, int ranks_per_node = 2, daemon::BrokerLimits limits = {},
                 size_t upstream_frame = StoreFront::kUpstreamFrameBytes)
      : broker(config(nodes * ranks_per_node, limits), *this, t0) {
    for (int n = 0; n < nodes; ++n) {
      std::vector<int32_t> ranks;
      for (int r = 0; r < ranks_per_node; ++r) ranks.push_back(n * ranks_per_node + r);
      nodes_.push_back(
          std::make_unique<Node>(*this, n + 1, ranks, nodes * ranks_per_node, upstream_frame));
      broker.on_connect(n + 1, t0);
    }
    pump();
    for (auto& n : nodes_) EXPECT_TRUE(n->core.daemon_ready());
  }
  static daemon::BrokerConfig config(int world, daemon::BrokerLimits limits) {
    daemon::BrokerConfig c;
    c.limits = limits;
    c.world_size = world;
    c.secret = kStoreSecret;
    c.job_id = "1";
    c.step_id = "0";
    c.make_nonce = [] { return kNonce; };
    return c;
  }
  void send(ConnId c, const proto::Response& r) override { down.emplace_back(c, r); }
  void close(ConnId) override {}

  // Ends the pass of the nodes' event loops (send_due), then delivers every
  // frame both ways until none is left.
  void pump() {
    while (true) {
      for (auto& n : nodes_) {
        if (!n->due) continue;
        n->due = false;
        n->front.send_due();
      }
      if (up.empty() && down.empty()) return;
      deliver_up();
      deliver_down();
    }
  }
  void deliver_up() {
    auto q = std::move(up);
    up.clear();
    for (auto& [c, bytes] : q) broker.on_frame(c, bytes, t0);
  }
  void deliver_down() {
    auto q = std::move(down);
    down.clear();
    for (auto& [c, r] : q) {
      if (daemon_before_wait_value) r.clear_values();  // it never set them for a WAIT
      nodes_.at(c - 1)->core.on_daemon_response(r, t0);
    }
  }
  Node& node(int i) { return *nodes_.at(static_cast<size_t>(i)); }

  // A client of node n sends r (in dialect d); a new v2 client opens with
  // VALIDATE, as PyTorch 2.2+ clients do.
  void ask(int n, ConnId client, const Req& r, ts::Dialect d = ts::Dialect::v2) {
    Node& nd = node(n);
    if (!nd.front.serves(client)) {
      nd.front.on_connect(client);
      if (d == ts::Dialect::v2) {
        Req v;
        v.op = Op::validate;
        v.number = ts::kValidationMagic;
        nd.front.on_bytes(client, *ts::encode_request(d, v));
      }
    }
    auto bytes = ts::encode_request(d, r);
    ASSERT_TRUE(bytes) << bytes.error().message;
    nd.front.on_bytes(client, *bytes);
  }

  Clock::time_point t0 = Clock::time_point{} + std::chrono::hours(1);
  std::deque<std::pair<ConnId, std::string>> up;
  std::optional<proto::Add> last_add;     // the last ADD a front sent the daemon
  bool daemon_before_wait_value = false;  // answers as a daemon without Wait.value
  std::deque<std::pair<ConnId, proto::Response>> down;
  daemon::Broker broker;
  std::vector<std::unique_ptr<Node>> nodes_;
};

AgentConfig node_config(std::vector<int32_t> ranks, int world_size, ConnId link) {
  AgentConfig c;
  c.secret = kStoreSecret;
  c.host = "n" + std::to_string(link);
  c.daemon_addr = "127.0.0.1:1";
  c.world_size = world_size;
  c.node_ranks = std::move(ranks);
  return c;
}

Node::Node(World& w, ConnId l, std::vector<int32_t> ranks, int world_size, size_t upstream_frame)
    : world(w),
      link(l),
      core(node_config(std::move(ranks), world_size, l), *this, w.t0),
      front(core, *this, {}, upstream_frame) {}

void Node::to_daemon(const proto::Request& r) {
  if (r.has_add()) world.last_add = r.add();
  world.up.emplace_back(link, r.SerializeAsString());
}

Req req(Op op, std::string key = {}, std::string value = {}, std::string expected = {}) {
  Req r;
  r.op = op;
  r.key = std::move(key);
  r.value = std::move(value);
  r.expected = std::move(expected);
  return r;
}
Req set(std::string k, std::string v) { return req(Op::set, std::move(k), std::move(v)); }
Req get(std::string k) { return req(Op::get, std::move(k)); }
Req add(std::string k, int64_t d) {
  Req r = req(Op::add, std::move(k));
  r.delta = d;
  return r;
}
Req with_keys(Op op, std::vector<std::string> keys) {
  Req r = req(op);
  r.keys = std::move(keys);
  return r;
}
Req wait_for(std::vector<std::string> keys) { return with_keys(Op::wait, std::move(keys)); }
std::string i64(int64_t n) { return ts::encode_int64(n); }

// Every operation once, on both nodes, against PyTorch's semantics: the
// reference store fed the same requests in the same order answers the same bytes.
TEST(StoreFront, AnswersAsPyTorchsOwnServer) {
  World w(2);
  ts::StoreModel model;
  std::vector<Req> script;
  script.push_back(set("/a", "1"));
  script.push_back(get("/a"));
  script.push_back(add("/n", 5));
  script.push_back(add("/n", -2));
  Req cas = req(Op::compare_set, "/a", "2", "1");
  script.push_back(cas);
  Req cas_missing = req(Op::compare_set, "/zz", "new", "old");
  script.push_back(cas_missing);
  Req check = req(Op::check);
  check.keys = {"/a", "/n"};
  script.push_back(check);
  check.keys.push_back("/none");
  script.push_back(check);
  script.push_back(wait_for({"/a", "/n"}));
  Req app = req(Op::append, "/s", "ab");
  script.push_back(app);
  script.push_back(app);
  script.push_back(get("/s"));
  Req ms = req(Op::multi_set);
  ms.keys = {"/m1", "/m2"};
  ms.values = {"x", "y"};
  script.push_back(ms);
  Req mg = req(Op::multi_get);
  mg.keys = {"/m2", "/m1", "/a"};
  script.push_back(mg);
  script.push_back(req(Op::get_num_keys));
  script.push_back(req(Op::delete_key, "/m1"));
  script.push_back(req(Op::delete_key, "/m1"));
  script.push_back(req(Op::get_num_keys));
  Req ping = req(Op::ping);
  ping.number = 4242;
  script.push_back(ping);
  for (size_t i = 0; i < script.size(); ++i) {
    const int n = static_cast<int>(i % 2);  // alternate nodes: one store for both
    const ConnId c = 7 + static_cast<ConnId>(n);
    w.ask(n, c, script[i]);
    w.pump();
    const auto out = model.apply(c, script[i]);
    std::string want;
    for (const auto& d : out.replies) want += d.bytes;
    const std::string got = w.node(n).got[c];
    w.node(n).got[c].clear();
    EXPECT_EQ(got, want) << "request " << i << " (" << ts::op_name(script[i].op) << ")";
  }
}

TEST(StoreFront, LegacyClientsOf113ShareTheStoreWithV2Clients) {
  World w(1);
  w.ask(0, 1, set("/k", "from 1.13"), ts::Dialect::legacy);
  w.ask(0, 1, wait_for({"/k"}), ts::Dialect::legacy);
  w.pump();
  w.ask(0, 2, get("/k"));
  w.pump();
  EXPECT_EQ(w.node(0).got[1], ts::encode_wait(ts::WaitAnswer::stop_waiting));
  EXPECT_EQ(w.node(0).got[2], ts::encode_value("from 1.13"));
}

// PyTorch's store barrier: every rank ADDs 1, then polls ADD 0. Eight ranks of
// a node asking in one pass of the agent's loop cost the daemon one request.
TEST(StoreFront, ANodesAddsAreOneUpstreamAddHandedOutInArrivalOrder) {
  World w(1, 8);
  for (ConnId c = 1; c <= 8; ++c) w.ask(0, c, add("init/", 1), ts::Dialect::legacy);
  EXPECT_EQ(w.node(0).front.counters().upstream, 0u);  // they leave at the pass's end
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  ASSERT_TRUE(w.last_add);
  EXPECT_EQ(w.last_add->delta(), 8);
  EXPECT_EQ(w.last_add->workers(), 8u);  // TCPStore's handshakes, counted through the fold
  for (ConnId c = 1; c <= 8; ++c)
    EXPECT_EQ(w.node(0).got[c], i64(static_cast<int64_t>(c))) << "client " << c;
  for (ConnId c = 1; c <= 8; ++c) w.ask(0, c, add("init/", 0), ts::Dialect::legacy);
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, 2u);
  EXPECT_EQ(w.last_add->workers(), 0u);  // polls announce nobody
  for (ConnId c = 1; c <= 8; ++c) EXPECT_EQ(w.node(0).got[c], i64(c) + i64(8));
}

// Adds that arrive while the node's ADD is on its way ride the next one.
TEST(StoreFront, AddsArrivingWhileOneIsInFlightRideTheNext) {
  World w(1, 8);
  w.ask(0, 1, add("barrier", 1));
  w.node(0).front.send_due();  // sent, its answer not delivered yet
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  for (ConnId c = 2; c <= 8; ++c) w.ask(0, c, add("barrier", 1));
  w.node(0).front.send_due();  // nothing leaves while one is in flight
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, 2u);
  for (ConnId c = 1; c <= 8; ++c)
    EXPECT_EQ(w.node(0).got[c], i64(static_cast<int64_t>(c))) << "client " << c;
}

TEST(StoreFront, IdenticalWaitsOfANodeRideOneRequestAndWakeTogether) {
  World w(2, 4);
  for (ConnId c = 1; c <= 4; ++c) w.ask(0, c, wait_for({"/nccl_id"}));
  w.pump();  // one request for the four, blocked in the daemon
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  for (ConnId c = 1; c <= 4; ++c) EXPECT_TRUE(w.node(0).got[c].empty());
  w.ask(1, 9, set("/nccl_id", "ID"));
  w.pump();
  for (ConnId c = 1; c <= 4; ++c)
    EXPECT_EQ(w.node(0).got[c], ts::encode_wait(ts::WaitAnswer::stop_waiting)) << c;
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  for (ConnId c = 1; c <= 4; ++c) w.ask(0, c, get("/nccl_id"));  // PyTorch's get(): WAIT, GET
  w.pump();
  // The WAIT went up as a blocking GET: its answer brought the value.
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  EXPECT_EQ(w.node(0).front.counters().gets_with_wait, 4u);
  for (ConnId c = 1; c <= 4; ++c)
    EXPECT_EQ(w.node(0).got[c],
              ts::encode_wait(ts::WaitAnswer::stop_waiting) + ts::encode_value("ID"));
}

// The GET right after its WAIT is answered with the value the WAIT found: the
// value at a point inside the client's get() call, a later write or not.
TEST(StoreFront, AGetRightAfterItsWaitIsAnsweredTheValueTheWaitFound) {
  World w(1);
  w.ask(0, 9, set("/k", "v1"));
  w.ask(0, 1, wait_for({"/k"}));
  w.pump();
  w.ask(0, 9, set("/k", "v2"));
  w.pump();
  const uint64_t up = w.node(0).front.counters().upstream;
  w.ask(0, 1, get("/k"));
  EXPECT_EQ(w.node(0).front.counters().upstream, up);  // answered at once
  EXPECT_EQ(w.node(0).got[1],
            ts::encode_wait(ts::WaitAnswer::stop_waiting) + ts::encode_value("v1"));
  w.node(0).got[1].clear();
  w.ask(0, 1, get("/k"));  // a second GET: its own read
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, up + 1);
  EXPECT_EQ(w.node(0).got[1], ts::encode_value("v2"));
  EXPECT_EQ(w.node(0).front.counters().gets_with_wait, 1u);
}

// A daemon from before Wait.value answers the WAIT alone: the GET is read
// from the store, as it always was.
TEST(StoreFront, ADaemonBeforeWaitValueLeavesTheGetToTheStore) {
  World w(1);
  w.daemon_before_wait_value = true;
  w.ask(0, 9, set("/k", "v"));
  w.ask(0, 1, wait_for({"/k"}));
  w.pump();
  const uint64_t up = w.node(0).front.counters().upstream;
  w.ask(0, 1, get("/k"));
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, up + 1);
  EXPECT_EQ(w.node(0).front.counters().gets_with_wait, 0u);
  EXPECT_EQ(w.node(0).got[1],
            ts::encode_wait(ts::WaitAnswer::stop_waiting) + ts::encode_value("v"));
}

// Any request between the WAIT and the GET (PyTorch's wait(), the program's
// own work, then its get()), another key, or a WAIT of several keys: the
// GET is read from the step's store.
TEST(StoreFront, AGetNotRightAfterAOneKeyWaitOfItsKeyIsReadFromTheStore) {
  World w(1);
  w.ask(0, 9, set("/k", "v"));
  w.ask(0, 9, set("/j", "j"));
  w.pump();
  const uint64_t up = w.node(0).front.counters().upstream;
  w.ask(0, 1, wait_for({"/k"}));
  w.pump();
  w.ask(0, 1, with_keys(Op::check, {"/j"}));
  w.ask(0, 1, get("/k"));
  w.ask(0, 2, wait_for({"/k"}));
  w.pump();
  w.ask(0, 2, get("/j"));
  w.ask(0, 3, wait_for({"/k", "/j"}));
  w.pump();
  w.ask(0, 3, get("/k"));
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().gets_with_wait, 0u);
  EXPECT_EQ(w.node(0).front.counters().upstream, up + 7);
  const std::string stop = ts::encode_wait(ts::WaitAnswer::stop_waiting);
  EXPECT_EQ(w.node(0).got[1],
            stop + ts::encode_check(ts::CheckAnswer::ready) + ts::encode_value("v"));
  EXPECT_EQ(w.node(0).got[2], stop + ts::encode_value("j"));
  EXPECT_EQ(w.node(0).got[3], stop + ts::encode_value("v"));
}

// A client's own write comes before its read: a GET of another client on its
// way already must not answer it with the value from before its SET.
TEST(StoreFront, AClientReadsItsOwnWriteAlthoughAnOlderReadIsInFlight) {
  World w(1);
  w.ask(0, 1, set("/k", "old"));
  w.pump();
  w.ask(0, 2, get("/k"));  // due; it leaves before the SET, not delivered yet
  w.ask(0, 1, set("/k", "new"));
  w.ask(0, 1, get("/k"));
  w.pump();
  EXPECT_EQ(w.node(0).got[2], ts::encode_value("old"));
  EXPECT_EQ(w.node(0).got[1], ts::encode_value("new"));
}

TEST(StoreFront, ACancelledWaitIsAnsweredWaitCanceledAndDroppedUpstream) {
  World w(1);
  w.ask(0, 1, wait_for({"/late"}));
  w.pump();
  EXPECT_EQ(w.broker.pending_calls(), 1u);
  w.ask(0, 1, req(Op::cancel_wait));
  w.pump();
  EXPECT_EQ(w.broker.pending_calls(), 0u);
  EXPECT_EQ(w.node(0).got[1], ts::encode_wait(ts::WaitAnswer::wait_canceled));
  w.ask(0, 2, set("/late", "v"));
  w.pump();
  EXPECT_EQ(w.node(0).got[1], ts::encode_wait(ts::WaitAnswer::wait_canceled));  // nothing more
}

TEST(StoreFront, BadInputClosesTheClientNamingWhat) {
  World w(1);
  Node& n = w.node(0);
  n.front.on_connect(1);
  n.front.on_bytes(1, std::string("\xee", 1));
  ASSERT_TRUE(n.closed.count(1));
  EXPECT_NE(n.closed[1].find("0xee"), std::string::npos) << n.closed[1];
  w.ask(0, 2, req(Op::watch_key, "/w"), ts::Dialect::legacy);
  ASSERT_TRUE(n.closed.count(2));
  EXPECT_NE(n.closed[2].find("WATCH_KEY"), std::string::npos) << n.closed[2];
  // A GET of a key no one set: PyTorch's (classic) server closes, so does the front.
  w.ask(0, 3, get("/never"));
  w.pump();
  ASSERT_TRUE(n.closed.count(3));
  EXPECT_NE(n.closed[3].find("GET"), std::string::npos) << n.closed[3];
  EXPECT_EQ(n.front.counters().closed, 3u);
  EXPECT_EQ(n.front.clients(), 0u);
}

TEST(StoreFront, AWaitingClientThatLeavesTakesItsWaitUpstreamWithIt) {
  World w(1);
  w.ask(0, 1, wait_for({"/gone"}));
  w.pump();
  EXPECT_EQ(w.broker.pending_calls(), 1u);
  w.node(0).front.on_disconnect(1);
  w.pump();
  EXPECT_EQ(w.broker.pending_calls(), 0u);
  EXPECT_EQ(w.node(0).front.counters().upstream, 1u);
  w.ask(0, 2, wait_for({"/gone"}));  // a new wait is not stuck behind the gone one
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, 2u);
  EXPECT_EQ(w.broker.pending_calls(), 1u);
}

// A client that sends a GET and, without waiting, a SET of the same key is
// answered the value from before its SET, as PyTorch's server answers it.
TEST(StoreFront, AReadSentBeforeTheClientsOwnWriteDoesNotSeeIt) {
  World w(1);
  w.ask(0, 1, set("/k", "old"));
  w.pump();
  w.ask(0, 1, get("/k"));
  w.ask(0, 1, set("/k", "new"));
  w.pump();
  EXPECT_EQ(w.node(0).got[1], ts::encode_value("old"));
  w.node(0).got[1].clear();
  w.ask(0, 2, get("/k"));
  w.pump();
  EXPECT_EQ(w.node(0).got[2], ts::encode_value("new"));
}

// A 1.13 client's wait timed out (it sends nothing to say so; its server
// keeps the wait) and it asks on: PyTorch's server answers at once, so the
// front's answers are not held behind the wait. The wait's own answer comes
// when its key is set, as from PyTorch's server.
TEST(StoreFront, ATimedOutWaitHoldsNoLaterReplyBack) {
  World w(1);
  w.ask(0, 2, set("/k", "v"), ts::Dialect::legacy);
  w.ask(0, 1, wait_for({"/missing"}), ts::Dialect::legacy);
  w.pump();
  EXPECT_TRUE(w.node(0).got[1].empty());
  w.ask(0, 1, wait_for({"/k"}), ts::Dialect::legacy);  // its get(): WAIT, then GET
  w.ask(0, 1, get("/k"), ts::Dialect::legacy);
  w.pump();
  const std::string stop = ts::encode_wait(ts::WaitAnswer::stop_waiting);
  EXPECT_EQ(w.node(0).got[1], stop + ts::encode_value("v"));
  w.ask(0, 2, set("/missing", "late"), ts::Dialect::legacy);
  w.pump();
  EXPECT_EQ(w.node(0).got[1], stop + ts::encode_value("v") + stop);
  EXPECT_EQ(w.broker.pending_calls(), 0u);
  // That old WAIT was not its latest request: a GET of its key is read upstream.
  const uint64_t up = w.node(0).front.counters().upstream;
  w.ask(0, 1, get("/missing"), ts::Dialect::legacy);
  w.pump();
  EXPECT_EQ(w.node(0).front.counters().upstream, up + 1);
  EXPECT_EQ(w.node(0).got[1], stop + ts::encode_value("v") + stop + ts::encode_value("late"));
}

// Answers other than a pending WAIT's still leave in request order.
TEST(StoreFront, RepliesOtherThanAPendingWaitsKeepTheirOrder) {
  World w(1);
  w.ask(0, 1, set("/k", "v"));
  w.pump();
  w.ask(0, 2, get("/k"));  // fold "/k" in flight, not answered yet
  w.node(0).front.send_due();
  w.ask(0, 1, get("/k"));                     // rides the next GET, after the one in flight
  w.ask(0, 1, with_keys(Op::check, {"/k"}));  // its own fold: answered first
  w.pump();
  EXPECT_EQ(w.node(0).got[1], ts::encode_value("v") + ts::encode_check(ts::CheckAnswer::ready));
}

// What PyTorch's servers take, the step's store takes (dp/store_limits.hpp):
// an 8 MiB value, an 8 KiB key, a multi_set of 3 x 3 MiB; read on another node.
TEST(StoreFront, LargeRequestsPyTorchTakesPassThroughTheStepsStore) {
  World w(2);
  const std::string big(8u << 20, 'b'), third(3u << 20, 't'), key(8 * 1024, 'k');
  w.ask(0, 1, set("/big", big), ts::Dialect::legacy);
  w.ask(0, 1, set(key, "long key"), ts::Dialect::legacy);
  Req ms = req(Op::multi_set);
  ms.keys = {"/m0", "/m1", "/m2"};
  ms.values = {third, third, third};
  w.ask(0, 2, ms);
  w.pump();
  w.ask(1, 3, get("/big"));
  w.ask(1, 3, get(key));
  Req mg = req(Op::multi_get);
  mg.keys = ms.keys;
  w.ask(1, 3, mg);
  w.pump();
  EXPECT_EQ(w.node(1).got[3], ts::encode_value(big) + ts::encode_value("long key") +
                                  ts::encode_values({third, third, third}));
  EXPECT_TRUE(w.node(0).closed.empty());
  EXPECT_TRUE(w.node(1).closed.empty());
}

// A request over PyTorch's caps closes its client alone, naming the key, the
// size and the limit; the node's other clients and the step go on.
TEST(StoreFront, AnOverLimitRequestClosesItsClientAloneNamingIt) {
  World w(1);
  Node& n = w.node(0);
  n.front.on_connect(1);
  const auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<char*>(&v), 8); };
  n.front.on_bytes(1, std::string(1, '\0') + u64(5) + "/huge" + u64(64u << 20) + "vvvv");
  ASSERT_TRUE(n.closed.count(1));
  for (const char* part : {"SET", "value of 67108864 bytes for key '/huge'", "limit of 8388608"})
    EXPECT_NE(n.closed[1].find(part), std::string::npos) << part << " not in " << n.closed[1];
  w.ask(0, 2, set("/k", "v"), ts::Dialect::legacy);
  w.ask(0, 2, get("/k"), ts::Dialect::legacy);
  w.pump();
  EXPECT_EQ(n.got[2], ts::encode_value("v"));
  EXPECT_EQ(n.front.counters().closed, 1u);
  EXPECT_FALSE(w.broker.aborted());
}

// A daemon with smaller frames than PyTorch's caps need: the front refuses
// what would not fit, for its client, instead of sending it on the node's link.
TEST(StoreFront, ARequestTooLargeForTheDaemonsFrameIsRefusedForItsClient) {
  World w(1, 2, {}, 2048);
  Node& n = w.node(0);
  w.ask(0, 1, set("/wide", std::string(4096, 'w')));
  ASSERT_TRUE(n.closed.count(1));
  EXPECT_NE(n.closed[1].find("SET of key '/wide' (4101 bytes) is over the limit of the step's "
                             "store"),
            std::string::npos)
      << n.closed[1];
  EXPECT_NE(n.closed[1].find("at most 2048"), std::string::npos) << n.closed[1];
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back("/key-number-" + std::to_string(i));
  w.ask(0, 3, wait_for(keys));  // a read too: its fold never leaves
  ASSERT_TRUE(n.closed.count(3));
  EXPECT_NE(n.closed[3].find("WAIT of 100 keys"), std::string::npos) << n.closed[3];
  w.ask(0, 2, set("/k", "v"));
  w.ask(0, 2, get("/k"));
  w.pump();
  EXPECT_EQ(n.got[2], ts::encode_value("v"));
  EXPECT_EQ(n.front.counters().upstream, 2u);  // only client 2's
}

// What the daemon refuses (here: the step's stored bytes) closes the client
// that asked, naming its request, and nothing else.
TEST(StoreFront, ARequestTheDaemonRefusesClosesItsClientNamingIt) {
  daemon::BrokerLimits small;
  small.max_total_bytes = 1000;
  World w(1, 2, small);
  Node& n = w.node(0);
  w.ask(0, 1, set("/big", std::string(2000, 'b')));
  w.pump();
  ASSERT_TRUE(n.closed.count(1));
  for (const char* part : {"SET of key '/big' (2004 bytes) refused by the step's store",
                           "--max-total-bytes", "closing the connection"})
    EXPECT_NE(n.closed[1].find(part), std::string::npos) << part << " not in " << n.closed[1];
  w.ask(0, 2, set("/k", "v"));
  w.ask(0, 2, get("/k"));
  w.pump();
  EXPECT_EQ(n.got[2], ts::encode_value("v"));
  EXPECT_FALSE(w.broker.aborted());
}

}  // namespace
}  // namespace dp::agent
