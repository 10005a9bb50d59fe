#include "client_connect.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "tcp_connect.hpp"
#include "unix_connect.hpp"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Challenge, hello with the proof, reply: the secret itself is never sent.
Result<void> say_hello(int fd, const ClientOptions& o, rdv::Deadline deadline,
                       rdv::ReplyReader& reader) {
  auto challenge = rdv::read_reply(fd, reader, deadline, "challenge", "dp-rendezvousd");
  if (!challenge) return challenge.error();
  if (challenge->code() != proto::OK)
    return rdv::error_from(*challenge);  // refused: LIMIT and the like
  if (challenge->id() != 0 || challenge->challenge().size() != rdv::kNonceBytes) {
    return make_error(Errc::protocol,
                      "dp-rendezvousd sent no challenge; is it a slurm-dp of protocol " +
                          std::to_string(rdv::protocol_range().oldest) + " or later?");
  }
  auto version = rdv::version_to_say(
      rdv::protocol_range(), challenge->protocol_version(),
      {"this program's libdp", "the program's libdp (a copy of its own, or slurm-dp on this node)"},
      {"the step's slurm-dp (dp-nodeagent, dp-rendezvousd)",
       "slurm-dp on the login and compute nodes"});
  if (!version) return version.error();
  proto::Request req;
  req.set_id(1);
  auto* h = req.mutable_hello();
  const proto::Role role = o.role == PeerRole::rank ? proto::ROLE_RANK : proto::ROLE_AGENT;
  const int rank = o.role == PeerRole::rank ? o.rank : -1;
  h->set_protocol_version(*version);
  h->set_role(role);
  h->set_rank(rank);
  h->set_world_size(o.world_size);
  h->set_host(o.hostname);
  h->set_proof(
      rdv::hello_proof(o.secret, challenge->challenge(), role, rank, o.world_size, o.hostname));
  if (h->proof().empty())  // sent empty, it would be refused as a wrong secret
    return make_error(Errc::internal, "cannot compute the hello proof: libcrypto's HMAC failed");
  std::string frame;
  rdv::append_frame(req, frame);
  DP_TRY(rdv::write_all(fd, frame.data(), frame.size(), deadline));
  auto reply = rdv::read_reply(fd, reader, deadline, "hello reply", "dp-rendezvousd");
  if (!reply) return reply.error();
  if (reply->code() != proto::OK) return rdv::error_from(*reply);
  return {};
}

// A full daemon (LIMIT) or an eviction before our hello (connection) pass: try again.
bool retryable(Errc c) { return c == Errc::connection || c == Errc::timeout || c == Errc::limit; }

}  // namespace

Result<Linked> connect_and_hello(const ClientOptions& o) {
  const bool local = !o.agent_socket.empty();
  const auto deadline = Clock::now() + o.connect_timeout;
  std::minstd_rand jitter(static_cast<unsigned>(Clock::now().time_since_epoch().count()) ^
                          static_cast<unsigned>(getpid()));
  milliseconds backoff(20);
  Error last = make_error(Errc::timeout, "connect timeout is zero");
  for (;;) {
    // Each attempt gets a slice of the total so a dropped SYN is retried.
    const auto attempt_deadline = std::min(deadline, Clock::now() + milliseconds(5'000));
    auto fd = local ? rdv::unix_connect_once(o.agent_socket, o.agent_netns)
                    : rdv::tcp_connect_once(o.host, o.port, attempt_deadline);
    if (fd) {
      UniqueFd sock(*fd);
      rdv::ReplyReader reader(rdv::kHelloFrameLimit);
      auto hello =
          say_hello(sock.get(), o, std::min(deadline, Clock::now() + milliseconds(10'000)), reader);
      if (hello) return Linked{std::move(sock), std::move(reader)};
      if (!retryable(hello.error().code)) return hello.error();
      last = hello.error();
    } else {
      last = fd.error();
      if (last.code == Errc::unauthorized || last.code == Errc::invalid_argument ||
          last.code == Errc::unavailable)
        return last;
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff + milliseconds(jitter() % (backoff.count() / 2 + 1)));
    backoff = std::min(backoff * 2, milliseconds(1'000));
  }
  return make_error(last.code == Errc::timeout ? Errc::timeout : Errc::connection,
                    last.message + " (gave up after " + std::to_string(o.connect_timeout.count()) +
                        " ms of retries; is the step's daemon running? check DP_RDV_ADDR)");
}

}  // namespace dp
