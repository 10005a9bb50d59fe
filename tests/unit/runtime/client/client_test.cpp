// The rendezvous client against the real daemon binary on 127.0.0.1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "daemon_process.hpp"
#include "rendezvous_client.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;

TEST(RendezvousClient, KeyValueOperations) {
  DaemonProcess d(1);
  auto c = connect_rank(d, 0, 1);
  ASSERT_TRUE(c);

  ASSERT_TRUE(c->set("a", "hello").ok());
  auto v = c->get("a");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "hello");

  auto e = c->exists("a");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(*e);
  auto ne = c->exists("nope");
  ASSERT_TRUE(ne.ok());
  EXPECT_FALSE(*ne);

  EXPECT_EQ(*c->add("n", 5), 5);
  EXPECT_EQ(*c->add("n", -2), 3);
  EXPECT_EQ(*c->get("n"), "3");
  auto bad_add = c->add("a", 1);
  ASSERT_FALSE(bad_add.ok());
  EXPECT_EQ(bad_add.error().code, Errc::invalid_argument);

  auto cas = c->compare_and_set("k", "", "first");
  ASSERT_TRUE(cas.ok());
  EXPECT_EQ(*cas, "first");
  auto cas2 = c->compare_and_set("k", "wrong", "second");
  ASSERT_TRUE(cas2.ok());
  EXPECT_EQ(*cas2, "first");
  EXPECT_EQ(*c->compare_and_set("k", "first", "second"), "second");

  ASSERT_TRUE(c->erase("k").ok());
  auto gone = c->erase("k");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, Errc::not_found);

  std::string binary(128, '\0');
  for (int i = 0; i < 128; ++i) binary[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(c->set("nccl/id", binary).ok());
  EXPECT_EQ(*c->get("nccl/id"), binary);

  auto s = c->stats();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->keys, 3u);  // a, n, nccl/id
  EXPECT_EQ(s->ranks_connected, 1u);
  EXPECT_NE(s->text.find("world_size 1"), std::string::npos);
  EXPECT_EQ(s->text.find(kSecret), std::string::npos);
  ASSERT_TRUE(c->goodbye().ok());
}

TEST(RendezvousClient, BlockingGetWaitsForAnotherPeer) {
  DaemonProcess d(2);
  auto c0 = connect_rank(d, 0, 2);
  auto c1 = must_connect(d.client_options(1, 2));
  ASSERT_TRUE(c0 && c1);
  std::thread publisher([&] {
    // Publish only once the getter is parked in the daemon.
    EXPECT_TRUE(daemon_holds_a_pending_call(*c0));
    EXPECT_TRUE(c0->set("id", "xyz").ok());
  });
  auto v = c1->get("id", milliseconds(5'000));
  publisher.join();
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, "xyz");
}

TEST(RendezvousClient, GetTimesOutWithAMessageNamingTheKey) {
  DaemonProcess d(1);
  auto c = connect_rank(d, 0, 1);
  ASSERT_TRUE(c);
  const auto t0 = std::chrono::steady_clock::now();
  auto v = c->get("never", milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, Errc::timeout);
  EXPECT_NE(v.error().message.find("'never'"), std::string::npos) << v.error().message;
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(2'000));
  // The connection is still usable afterwards.
  EXPECT_TRUE(c->set("x", "1").ok());
}

TEST(RendezvousClient, WaitForSeveralKeys) {
  DaemonProcess d(1);
  auto c = connect_rank(d, 0, 1);
  auto agent = must_connect(d.client_options(-1, 1, PeerRole::agent));
  ASSERT_TRUE(c && agent);
  ASSERT_TRUE(c->set("a", "1").ok());
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    auto r = c->wait({"a", "b", "c"}, milliseconds(5'000));
    EXPECT_TRUE(r.ok()) << r.error().message;
    done = true;
  });
  ASSERT_TRUE(agent->set("b", "2").ok());
  EXPECT_FALSE(done.load());
  ASSERT_TRUE(agent->set("c", "3").ok());
  waiter.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(error_code(c->wait({"zzz"}, milliseconds(200))), Errc::timeout);
}

TEST(RendezvousClient, BarrierReleasesOnlyWhenEveryRankArrived) {
  constexpr int kWorld = 8;
  DaemonProcess d(kWorld);
  ASSERT_TRUE(d.ready());
  std::vector<std::unique_ptr<RendezvousClient>> cs;
  for (int r = 0; r < kWorld; ++r) cs.push_back(must_connect(d.client_options(r, kWorld)));
  std::atomic<int> passed{0};
  std::vector<std::thread> ts;
  for (int r = 0; r < kWorld; ++r) {
    ts.emplace_back([&, r] {
      for (int round = 0; round < 3; ++round) {
        auto b = cs[r]->barrier("step", milliseconds(10'000));
        EXPECT_TRUE(b.ok()) << b.error().message;
        passed++;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(passed.load(), 3 * kWorld);

  auto lonely = cs[0]->barrier("partial", milliseconds(300));
  ASSERT_FALSE(lonely.ok());
  EXPECT_EQ(lonely.error().code, Errc::timeout);
  EXPECT_NE(lonely.error().message.find("1 of 8 ranks arrived"), std::string::npos)
      << lonely.error().message;
  EXPECT_NE(lonely.error().message.find("missing ranks 1,2,3"), std::string::npos)
      << lonely.error().message;
}

TEST(RendezvousClient, AgentsCannotEnterBarriers) {
  DaemonProcess d(1);
  ASSERT_TRUE(d.ready());
  auto a = must_connect(d.client_options(-1, 1, PeerRole::agent));
  ASSERT_TRUE(a);
  EXPECT_EQ(error_code(a->barrier("x", milliseconds(500))), Errc::invalid_argument);
}

TEST(RendezvousClient, ManyProcessesExchangeAnId) {
  constexpr int kWorld = 16;
  DaemonProcess d(kWorld);
  ASSERT_TRUE(d.ready());
  const std::string id(128, 'Q');
  std::vector<pid_t> kids;
  for (int r = 0; r < kWorld; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      auto c = RendezvousClient::connect(d.client_options(r, kWorld));
      if (!c) _exit(10);
      if (r == 0 && !(*c)->set("nccl_id", id).ok()) _exit(11);
      auto v = (*c)->get("nccl_id", milliseconds(10'000));
      if (!v || *v != id) _exit(12);
      if (!(*c)->barrier("ready", milliseconds(10'000)).ok()) _exit(13);
      if (!(*c)->goodbye().ok()) _exit(14);
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  }
  // Every rank said goodbye, and the step goes on (a second init): the
  // daemon stays for srun to stop, and logged its start-up phases.
  {
    auto again = RendezvousClient::connect(d.client_options(0, kWorld));
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(*(*again)->get("nccl_id", milliseconds(1'000)), id);
  }
  ASSERT_TRUE(d.running());
  kill(d.pid(), SIGTERM);
  auto st = d.wait_exit(milliseconds(10'000));
  ASSERT_TRUE(st.has_value()) << "daemon did not exit on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0);
  const std::string log = d.log();
  EXPECT_NE(log.find("startup timings first_hello=+"), std::string::npos) << log;
  EXPECT_NE(log.find("id_fetched_by_all=+"), std::string::npos) << log;
  EXPECT_EQ(log.find(kSecret), std::string::npos);
}

TEST(RendezvousClient, ThreadsShareOneClient) {
  DaemonProcess d(1);
  auto c = connect_rank(d, 0, 1);
  ASSERT_TRUE(c);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 200; ++i) ASSERT_TRUE(c->add("counter", 1).ok());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(*c->get("counter"), "1600");
}

TEST(RendezvousClient, ConnectRetriesUntilTheDaemonListens) {
  // Nothing listens on the port yet: connect must keep trying, then give up with a clear error.
  ClientOptions o;
  o.host = "127.0.0.1";
  o.port = 1;  // privileged and unused
  o.secret = kSecret;
  o.rank = 0;
  o.world_size = 1;
  o.connect_timeout = milliseconds(400);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = RendezvousClient::connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(300));
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_NE(c.error().message.find("DP_RDV_ADDR"), std::string::npos) << c.error().message;
}

TEST(RendezvousClient, WrongSecretIsRefusedAtOnce) {
  DaemonProcess d(1);
  ASSERT_TRUE(d.ready());
  auto o = d.client_options(0, 1);
  o.secret = std::string(64, 'f');
  const auto t0 = std::chrono::steady_clock::now();
  auto c = RendezvousClient::connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::unauthorized);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(2'000));
  EXPECT_EQ(c.error().message.find(kSecret), std::string::npos);
}

TEST(RendezvousClient, DuplicateRankAndWrongWorldAreRefused) {
  DaemonProcess d(2);
  auto c0 = connect_rank(d, 0, 2);
  ASSERT_TRUE(c0);
  auto dup = RendezvousClient::connect(d.client_options(0, 2));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, Errc::conflict);
  auto world = RendezvousClient::connect(d.client_options(1, 3));
  ASSERT_FALSE(world.ok());
  EXPECT_EQ(world.error().code, Errc::invalid_argument);
  EXPECT_NE(world.error().message.find("WORLD_SIZE 3"), std::string::npos);
}

TEST(RendezvousClient, ParseAddress) {
  ClientOptions o;
  ASSERT_TRUE(RendezvousClient::parse_address("node1:1234", o).ok());
  EXPECT_EQ(o.host, "node1");
  EXPECT_EQ(o.port, 1234);
  ASSERT_TRUE(RendezvousClient::parse_address("[::1]:80", o).ok());
  EXPECT_EQ(o.host, "::1");
  EXPECT_EQ(o.port, 80);
  for (const char* bad :
       {"", "node1", ":80", "node1:", "node1:0", "node1:70000", "node1:8x", "::1:80", "[::1]80"}) {
    auto r = RendezvousClient::parse_address(bad, o);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, Errc::invalid_argument);
    EXPECT_NE(r.error().message.find("DP_RDV_ADDR"), std::string::npos);
  }
}

}  // namespace
}  // namespace dp::test
