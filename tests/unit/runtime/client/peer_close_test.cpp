// A node agent that pushes the step's abort and closes at once (it lost the
// daemon): every call of its ranks fails with that abort, never with the
// "Broken pipe" of a send that raced the close (seen in e2e stopped_daemon).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "dp/unique_fd.hpp"
#include "dp/unix_socket.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "rendezvous_client.hpp"
#include "unix_connect.hpp"

namespace dp::test {
namespace {

using std::chrono::milliseconds;

const std::string kWhy = "slurm-dp: node n2 lost the step's daemon (dp-rendezvousd): test";

// Reads frames from fd until one is whole; false at EOF.
bool read_frame(int fd, rdv::FrameDecoder& dec) {
  char buf[4096];
  std::string_view payload;
  while (dec.next(payload) != rdv::FrameDecoder::Status::frame) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    dec.feed(buf, static_cast<size_t>(n));
  }
  return true;
}

void send_response(int fd, const proto::Response& r) {
  std::string frame;
  rdv::append_frame(r, frame);
  (void)!::write(fd, frame.data(), frame.size());
}

// One connection: challenge, any hello is welcome, then the abort and close.
void agent_that_gives_up(int listener) {
  UniqueFd c(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!c) return;
  proto::Response challenge;
  challenge.set_challenge(std::string(rdv::kNonceBytes, 'n'));
  send_response(c.get(), challenge);
  rdv::FrameDecoder dec(1 << 16);
  if (!read_frame(c.get(), dec)) return;
  proto::Response ok;
  ok.set_id(1);
  send_response(c.get(), ok);
  proto::Response abort;
  abort.set_code(proto::ABORTED);
  abort.set_message(kWhy);
  send_response(c.get(), abort);
}

TEST(RendezvousClient, APeerThatPushedAnAbortAndClosedIsNamedByItsAbort) {
  const std::string name = "@dp-test-peer-close-" + std::to_string(getpid());
  auto addr = unix_address(name);
  ASSERT_TRUE(addr);
  UniqueFd l(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(bind(l.get(), reinterpret_cast<const sockaddr*>(&addr->sa), addr->len), 0);
  ASSERT_EQ(listen(l.get(), 8), 0);
  // The send that meets the closed socket and the I/O thread's read of the
  // push race: many rounds, each of which must name the abort.
  for (int round = 0; round < 40; ++round) {
    std::thread agent(agent_that_gives_up, l.get());
    ClientOptions o;
    o.agent_socket = name;
    o.secret = "00";
    o.rank = 2;
    o.world_size = 4;
    o.connect_timeout = milliseconds(5'000);
    o.call_timeout = milliseconds(5'000);
    o.heartbeat_interval = milliseconds(1);
    auto c = RendezvousClient::connect(o);
    agent.join();  // the agent has closed
    ASSERT_TRUE(c) << c.error().message;
    for (int call = 0; call < 3; ++call) {
      auto r = (*c)->set("k", "v");
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error().code, Errc::aborted) << "round " << round << ": " << r.error().message;
      EXPECT_EQ(r.error().message, kWhy) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace dp::test
