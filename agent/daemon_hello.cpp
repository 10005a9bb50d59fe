#include "daemon_hello.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"
#include "rendezvous_client.hpp"
#include "tcp_connect.hpp"

namespace dp::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Full, or evicted before the hello: the daemon's own text says which.
bool refused_for_room(const proto::Response& r) { return r.code() == proto::LIMIT; }

// One attempt. A retryable failure is an error with code connection,
// timeout or limit; anything else ends the tries.
Result<DaemonLink> attempt(const NodeHello& h, const std::string& host, uint16_t port,
                           const HelloRetry& retry) {
  const auto until = std::min(retry.deadline, Clock::now() + retry.attempt);
  auto fd = rdv::tcp_connect_once(host, port, until);
  DP_TRY(fd);
  DaemonLink link{service::UniqueFd(*fd), rdv::ReplyReader(rdv::kHelloFrameLimit), {}};
  auto challenge =
      rdv::read_reply(link.fd.get(), link.reader, until, "challenge", "the step's daemon");
  DP_TRY(challenge);
  if (refused_for_room(*challenge)) return rdv::error_from(*challenge);
  if (challenge->code() != proto::OK || challenge->id() != 0 ||
      challenge->challenge().size() != rdv::kNonceBytes)
    return make_error(Errc::protocol,
                      "the step's daemon refused the node: " + rdv::error_from(*challenge).message);
  auto hello = node_hello_request(h, *challenge);
  DP_TRY(hello);
  const proto::Request& req = *hello;
  if (req.hello().proof().empty())  // sent empty, it would be refused as a wrong secret
    return make_error(Errc::internal, "cannot compute the hello proof: libcrypto's HMAC failed");
  std::string frame;
  rdv::append_frame(req, frame);
  DP_TRY(rdv::write_all(link.fd.get(), frame.data(), frame.size(), until));
  auto reply =
      rdv::read_reply(link.fd.get(), link.reader, until, "hello reply", "the step's daemon");
  DP_TRY(reply);
  if (refused_for_room(*reply)) return rdv::error_from(*reply);
  link.reply = std::move(*reply);
  return link;
}

bool retryable(Errc c) { return c == Errc::connection || c == Errc::timeout || c == Errc::limit; }

bool cancelled(const HelloRetry& r) { return r.cancel && r.cancel->load(); }

// The backoff, in slices short enough that a cancel is heard soon.
void pause_for(milliseconds pause, const HelloRetry& r) {
  const auto until = Clock::now() + pause;
  while (!cancelled(r) && Clock::now() < until)
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), milliseconds(50)));
}

}  // namespace

Result<DaemonLink> hello_daemon(const NodeHello& h, const HelloRetry& retry) {
  ClientOptions o;
  DP_TRY(RendezvousClient::parse_address(h.addr, o));
  const auto start = Clock::now();
  std::minstd_rand jitter(static_cast<unsigned>(start.time_since_epoch().count()) ^
                          static_cast<unsigned>(getpid()));
  milliseconds backoff = retry.first_backoff;
  Error last = make_error(Errc::timeout, "no time left to connect");
  int tries = 0;
  while (Clock::now() < retry.deadline && !cancelled(retry)) {
    ++tries;
    auto link = attempt(h, o.host, o.port, retry);
    if (link) return link;
    if (!retryable(link.error().code)) return link.error();
    // An attempt cut short by the overall deadline says less than the
    // daemon's own words from an earlier try (the eviction), so keep those.
    const bool cut_by_deadline =
        link.error().code == Errc::timeout && Clock::now() >= retry.deadline;
    if (tries == 1 || !cut_by_deadline) last = link.error();
    // Jitter: nodes evicted together do not come back together.
    const auto pause = backoff + milliseconds(jitter() % (backoff.count() / 2 + 1));
    if (Clock::now() + pause >= retry.deadline) break;
    pause_for(pause, retry);  // a retry backoff, bounded by the deadline
    backoff = std::min(backoff * 2, retry.max_backoff);
  }
  const auto spent = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
  return make_error(last.code, last.message + " (" + std::to_string(tries) + " tries in " +
                                   std::to_string(spent) + " ms)");
}

}  // namespace dp::agent
