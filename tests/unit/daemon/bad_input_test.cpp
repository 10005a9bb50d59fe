// The "Security and bad input" list: each bad peer gets an error
// (or is closed), and the daemon stays up, serves the others, loses no key.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include "daemon_process.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = std::make_unique<DaemonProcess>(
        1, std::vector<std::string>{"--hello-timeout-ms", "1000", "--max-value-bytes", "1024",
                                    "--max-request-bytes", "4096"});
    ASSERT_TRUE(d_->ready()) << d_->first_line();
    auto c = RendezvousClient::connect(d_->client_options(0, 1));
    ASSERT_TRUE(c.ok()) << c.error().message;
    good_ = std::move(*c);
    ASSERT_TRUE(good_->set("precious", "value").ok());
  }
  // The daemon still serves the good rank and kept its key.
  void expect_healthy() {
    ASSERT_TRUE(d_->running());
    auto v = good_->get("precious", milliseconds(2'000));
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_EQ(*v, "value");
    EXPECT_TRUE(good_->set("after", "ok").ok());
    EXPECT_EQ(d_->log().find(kSecret), std::string::npos) << "the secret leaked into the log";
  }
  // Sends bytes on a new connection, which the daemon must then close; the
  // code of its one answer (none: a failure already reported).
  std::optional<proto::Code> answer_then_close(const std::string& bytes) {
    RawConn c(d_->port());
    if (!c.send_bytes(bytes)) {
      ADD_FAILURE() << "cannot send";
      return std::nullopt;
    }
    auto r = c.read_response();
    EXPECT_TRUE(r.has_value()) << "no answer";
    EXPECT_TRUE(c.closed_by_peer());
    if (!r) return std::nullopt;
    return r->code();
  }
  // The daemon's refusal of a well-formed hello that claims `version`.
  std::string version_refusal(int version) {
    RawConn c(d_->port());
    if (!c.send_request(
            hello_request(c.nonce(), kSecret, -1, proto::ROLE_AGENT, "rawhost", version)))
      return "(not sent)";
    auto r = c.read_response();
    if (!r) return "(no answer)";
    if (r->code() != proto::PROTOCOL) return "(code " + std::to_string(r->code()) + ")";
    return r->message();
  }
  // That refusal says `text`, and the daemon serves on.
  void expect_version_refusal(int version, const std::string& text) {
    const std::string refusal = version_refusal(version);
    EXPECT_NE(refusal.find(text), std::string::npos) << refusal;
    expect_healthy();
  }
  std::unique_ptr<DaemonProcess> d_;
  std::unique_ptr<RendezvousClient> good_;
};

TEST_F(BadInput, GarbageBytes) {
  const auto code = answer_then_close(std::string("\x00\x00\x00\x10GET / HTTP/1.1\r\n", 20));
  ASSERT_TRUE(code.has_value());
  EXPECT_NE(*code, proto::OK);
  expect_healthy();
}

TEST_F(BadInput, HttpRequestIsAnOversizedFrame) {
  const auto code = answer_then_close("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, proto::LIMIT);
  expect_healthy();
}

TEST_F(BadInput, TruncatedFrameIsClosedAtHelloTimeout) {
  RawConn c(d_->port());
  const std::string f =
      frame_of(hello_request(c.nonce(), kSecret, -1, proto::ROLE_AGENT, "rawhost"));
  ASSERT_TRUE(c.send_bytes(f.substr(0, f.size() - 3)));
  expect_healthy();
  EXPECT_TRUE(c.closed_by_peer(milliseconds(4'000)));
  expect_healthy();
}

// A request is its sender's, never its connection's: an authenticated
// peer's over-limit frame (a node agent's speaks for a whole node) is
// refused under its own id, its bytes skipped, and the connection serves on.
TEST_F(BadInput, OverLimitRequestAfterHelloIsRefusedAndTheConnectionStays) {
  RawConn c(d_->port());
  ASSERT_TRUE(c.hello());
  const auto answer = [&c]() {  // the next answer, past keepalive pings
    for (;;) {
      auto r = c.read_response();
      if (!r || r->id() != 0 || r->code() != proto::OK) return r;
    }
  };
  proto::Request big;
  big.set_id(77);
  big.mutable_set()->set_key("big");
  big.mutable_set()->set_value(std::string(64 * 1024, 'v'));  // over the 10 KiB frame
  ASSERT_TRUE(c.send_request(big));
  auto r = answer();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id(), 77u);
  EXPECT_EQ(r->code(), proto::LIMIT);
  EXPECT_NE(r->message().find("exceeds the limit of 10240 bytes"), std::string::npos)
      << r->message();
  EXPECT_NE(r->message().find("--max-request-bytes"), std::string::npos) << r->message();
  proto::Request get;
  get.set_id(78);
  get.mutable_get()->set_key("precious");
  ASSERT_TRUE(c.send_request(get));
  r = answer();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id(), 78u);
  EXPECT_EQ(r->code(), proto::OK) << r->message();
  EXPECT_EQ(r->value(), "value");
  expect_healthy();
}

TEST_F(BadInput, UnknownOperationKeepsTheConnection) {
  RawConn c(d_->port());
  ASSERT_TRUE(c.hello());
  // A request with field 99 set (an operation this daemon does not know).
  std::string payload;
  payload += static_cast<char>(0x08);  // id = 7
  payload += static_cast<char>(7);
  payload.append("\x9a\x06\x00", 3);  // field 99, length-delimited, empty
  std::string frame(4, '\0');
  frame[3] = static_cast<char>(payload.size());
  ASSERT_TRUE(c.send_bytes(frame + payload));
  auto r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id(), 7u);
  EXPECT_EQ(r->code(), proto::PROTOCOL);
  EXPECT_NE(r->message().find("unknown operation"), std::string::npos);
  proto::Request ok;
  ok.set_id(8);
  ok.mutable_exists()->set_key("precious");
  ASSERT_TRUE(c.send_request(ok));
  auto r2 = c.read_response();
  ASSERT_TRUE(r2.has_value());
  EXPECT_TRUE(r2->flag());
  expect_healthy();
}

TEST_F(BadInput, WrongProtocolVersion) {
  RawConn c(d_->port());
  EXPECT_FALSE(c.hello(kSecret, -1, proto::ROLE_AGENT, 99));
  EXPECT_TRUE(c.closed_by_peer());
  expect_version_refusal(99,
                         "speaks protocol version 3, the dp client versions 98-99; upgrade "
                         "slurm-dp on srun's host (the login nodes) to the release of the dp "
                         "client");
}

TEST_F(BadInput, APeerOfTheEarlierHelloIsRefusedNamingBothVersions) {
  expect_version_refusal(2,
                         "slurm-dp releases too far apart: the step's dp-rendezvousd speaks "
                         "protocol version 3, the dp client version 2; upgrade the dp client "
                         "(libdp, dp-top) to the release of the step's dp-rendezvousd");
}

TEST_F(BadInput, OverLimitValueAndKey) {
  auto big = good_->set("big", std::string(2048, 'x'));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, Errc::limit);
  EXPECT_NE(big.error().message.find("--max-value-bytes"), std::string::npos);
  auto key = good_->set(std::string(9000, 'k'), "v");  // over 8 KiB
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().code, Errc::limit);
  auto ex = good_->exists("big");
  ASSERT_TRUE(ex.ok());
  EXPECT_FALSE(*ex);
  expect_healthy();
}

TEST_F(BadInput, WrongSecret) {
  RawConn c(d_->port());
  EXPECT_FALSE(c.hello(std::string(64, '0')));
  EXPECT_TRUE(c.closed_by_peer());
  RawConn c2(d_->port());
  proto::Request req;
  req.set_id(5);
  req.mutable_set()->set_key("precious");
  req.mutable_set()->set_value("stolen");
  ASSERT_TRUE(c2.send_request(req));  // no hello at all
  auto r = c2.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code(), proto::UNAUTHORIZED);
  EXPECT_TRUE(c2.closed_by_peer());
  expect_healthy();
  auto s = good_->stats();
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->text.find("rejected_unauthorized 2"), std::string::npos) << s->text;
}

TEST_F(BadInput, SlowClientOneBytePerTick) {
  RawConn slow(d_->port());
  const std::string f =
      frame_of(hello_request(slow.nonce(), kSecret, -1, proto::ROLE_AGENT, "rawhost"));
  // A byte every 100 ms: the hello cannot complete within the 1 s hello timeout.
  bool closed = false;
  for (size_t i = 0; i < f.size() && !closed; ++i) {
    if (!slow.send_bytes(f.substr(i, 1))) closed = true;
    expect_healthy();
    closed = closed || slow.closed_by_peer(milliseconds(100));
  }
  EXPECT_TRUE(closed || slow.closed_by_peer(milliseconds(3'000)));
  expect_healthy();
}

TEST_F(BadInput, TenThousandIdleConnections) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 10'200) GTEST_SKIP() << "fd limit " << rl.rlim_cur << " < 10200";
  std::vector<std::unique_ptr<RawConn>> idle;
  idle.reserve(10'000);
  for (int i = 0; i < 10'000; ++i) {
    idle.push_back(std::make_unique<RawConn>(d_->port()));
    ASSERT_TRUE(idle.back()->connected()) << "connection " << i;
  }
  expect_healthy();
  // A new rank can still join and be served while they sit there.
  auto agent = RendezvousClient::connect(d_->client_options(-1, 1, PeerRole::agent));
  ASSERT_TRUE(agent.ok()) << agent.error().message;
  EXPECT_EQ(*(*agent)->get("precious"), "value");
  // The hello timeout sweeps them all away.
  EXPECT_TRUE(poll_until([&] { return good_->stats()->connections <= 2; }, milliseconds(10'000)))
      << good_->stats()->text;
  expect_healthy();
}

TEST(Limits, APeerThatNeverReadsIsDroppedWithoutHarm) {
  DaemonProcess d(1);
  ASSERT_TRUE(d.ready());
  auto c = RendezvousClient::connect(d.client_options(0, 1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->set("big", std::string(1 << 20, 'b')).ok());
  RawConn hog(d.port());  // an agent: dropping it must not abort the job
  ASSERT_TRUE(hog.hello());
  std::string burst;
  for (int i = 0; i < 120; ++i) {  // 120 MiB of replies it never reads
    proto::Request g;
    g.set_id(10 + i);
    g.mutable_get()->set_key("big");
    burst += frame_of(g);
  }
  ASSERT_TRUE(hog.send_bytes(burst));
  EXPECT_TRUE(poll_until([&] { return (*c)->stats()->connections == 1; }, milliseconds(10'000)))
      << (*c)->stats()->text;
  auto s = (*c)->stats();
  ASSERT_TRUE(s.ok());
  EXPECT_NE(s->text.find("aborted no"), std::string::npos);
  EXPECT_EQ((*c)->get("big")->size(), 1u << 20);
}

TEST(Sanitizing, BinaryHostAndReasonReachOthersPrintable) {
  DaemonProcess d(2);
  ASSERT_TRUE(d.ready());
  auto c0 = RendezvousClient::connect(d.client_options(0, 2));
  ASSERT_TRUE(c0.ok());
  RawConn raw(d.port());
  // A host name that is not UTF-8, with an escape sequence.
  ASSERT_TRUE(raw.send_request(hello_request(raw.nonce(), kSecret, 1, proto::ROLE_RANK,
                                             std::string("bad\xff\x1b[31mhost", 13))));
  auto hr = raw.read_response();
  ASSERT_TRUE(hr.has_value());
  ASSERT_EQ(hr->code(), proto::OK) << hr->message();
  proto::Request a;
  a.set_id(2);
  a.mutable_abort()->set_reason(std::string("nan\xfe\n", 5));
  ASSERT_TRUE(raw.send_request(a));
  auto r = (*c0)->get("x", milliseconds(5'000));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::aborted);
  EXPECT_NE(r.error().message.find("rank 1 (host bad\\xff\\x1b[31mhost): nan\\xfe\\n"),
            std::string::npos)
      << r.error().message;
}

TEST(Limits, ConnectionsOverTheLimitAreRefusedWithAMessage) {
  DaemonProcess d(1, {"--max-connections", "3"});
  ASSERT_TRUE(d.ready());
  auto c = RendezvousClient::connect(d.client_options(0, 1));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->set("k", "v").ok());
  RawConn a(d.port()), b(d.port());
  ASSERT_TRUE(a.hello() && b.hello());
  RawConn over(d.port());
  auto r = over.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code(), proto::LIMIT);
  EXPECT_NE(r->message().find("--max-connections"), std::string::npos) << r->message();
  EXPECT_TRUE(over.closed_by_peer());
  EXPECT_EQ(*(*c)->get("k"), "v");
}

}  // namespace
}  // namespace dp::test
