// TCP implementation of dp::RendezvousClient: the caller threads write
// requests; one I/O thread reads replies, sends heartbeats and delivers the
// daemon's abort push.
#include "rendezvous_client.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

#include "client_connect.hpp"
#include "dp/params.hpp"
#include "dp/shown_value.hpp"
#include "dp/silence_watch.hpp"
#include "dp/unique_fd.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "rank_progress.hpp"
#include "reply_reader.hpp"

namespace dp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The daemon answers timeouts itself; allow for the trip.
milliseconds reply_grace() { return milliseconds(param(Param::reply_grace_ms)); }

uint32_t timeout_field(milliseconds t) {
  // 0 on the wire means "no deadline"; a caller's 0 means "do not wait long".
  return static_cast<uint32_t>(std::clamp<long long>(t.count(), 1, UINT32_MAX));
}

class SocketRendezvousClient final : public RendezvousClient {
 public:
  // reader: what the hello left buffered (a push right behind its reply).
  SocketRendezvousClient(const ClientOptions& o, UniqueFd fd, UniqueFd wake_fd,
                         rdv::ReplyReader reader)
      : opts_(o), fd_(std::move(fd)), wake_fd_(std::move(wake_fd)), reader_(std::move(reader)) {
    reader_.set_max_frame_bytes(opts_.max_reply_frame);
    io_ = std::thread([this] { io_loop(); });
  }

  ~SocketRendezvousClient() override {
    if (getpid() != owner_pid_) {
      // A forked child (a data-loader worker, say) exiting: the connection and
      // the I/O thread belong to the parent. No goodbye, no join (this
      // copy's descriptors close with their owners).
      io_.detach();
      return;
    }
    if (!goodbye_sent_.load()) (void)goodbye();
    stop_.store(true);
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof one);
    if (io_.joinable()) io_.join();
  }

  Result<void> set(std::string_view key, std::string_view value) override {
    return store(key, value, false);
  }

  Result<void> set_once(std::string_view key, std::string_view value) override {
    return store(key, value, true);
  }

  Result<void> store(std::string_view key, std::string_view value, bool once) {
    proto::Request r;
    r.mutable_set()->set_key(std::string(key));
    r.mutable_set()->set_value(std::string(value));
    r.mutable_set()->set_once(once);
    auto resp = call(r, Clock::now() + opts_.call_timeout, "set " + shown_key(key));
    if (!resp) return resp.error();
    return {};
  }

  Result<std::string> get(std::string_view key, std::optional<milliseconds> timeout) override {
    const milliseconds t = timeout.value_or(opts_.call_timeout);
    proto::Request r;
    auto* g = r.mutable_get();
    g->set_key(std::string(key));
    g->set_blocking(true);
    g->set_timeout_ms(timeout_field(t));
    auto resp = call(r, Clock::now() + t + reply_grace(), "get " + shown_key(key));
    if (!resp) return resp.error();
    return std::move(*resp->mutable_value());
  }

  Result<int64_t> add(std::string_view key, int64_t delta) override {
    proto::Request r;
    r.mutable_add()->set_key(std::string(key));
    r.mutable_add()->set_delta(delta);
    auto resp = call(r, Clock::now() + opts_.call_timeout, "add " + shown_key(key));
    if (!resp) return resp.error();
    return static_cast<int64_t>(resp->number());
  }

  Result<std::string> compare_and_set(std::string_view key, std::string_view expected,
                                      std::string_view desired) override {
    proto::Request r;
    auto* c = r.mutable_compare_and_set();
    c->set_key(std::string(key));
    c->set_expected(std::string(expected));
    c->set_desired(std::string(desired));
    auto resp = call(r, Clock::now() + opts_.call_timeout, "compare_and_set " + shown_key(key));
    if (!resp) return resp.error();
    return std::move(*resp->mutable_value());
  }

  Result<void> erase(std::string_view key) override {
    proto::Request r;
    r.mutable_erase()->set_key(std::string(key));
    auto resp = call(r, Clock::now() + opts_.call_timeout, "erase " + shown_key(key));
    if (!resp) return resp.error();
    return {};
  }

  Result<bool> exists(std::string_view key) override {
    proto::Request r;
    r.mutable_exists()->set_key(std::string(key));
    auto resp = call(r, Clock::now() + opts_.call_timeout, "exists " + shown_key(key));
    if (!resp) return resp.error();
    return resp->flag();
  }

  Result<void> wait(const std::vector<std::string>& keys,
                    std::optional<milliseconds> timeout) override {
    const milliseconds t = timeout.value_or(opts_.call_timeout);
    proto::Request r;
    auto* w = r.mutable_wait();
    for (const auto& k : keys) w->add_keys(k);
    w->set_timeout_ms(timeout_field(t));
    auto resp = call(r, Clock::now() + t + reply_grace(), "wait");
    if (!resp) return resp.error();
    return {};
  }

  Result<void> barrier(std::string_view name, std::optional<milliseconds> timeout) override {
    const milliseconds t = timeout.value_or(opts_.call_timeout);
    proto::Request r;
    r.mutable_barrier()->set_name(std::string(name));
    r.mutable_barrier()->set_timeout_ms(timeout_field(t));
    auto resp = call(r, Clock::now() + t + reply_grace(), "barrier " + shown_key(name));
    if (!resp) return resp.error();
    return {};
  }

  Result<void> abort(std::string_view reason) override {
    proto::Request r;
    r.mutable_abort()->set_reason(std::string(reason));
    auto resp = call(r, Clock::now() + opts_.call_timeout, "abort");
    if (!resp && resp.error().code != Errc::aborted) return resp.error();
    return {};
  }

  Result<DaemonStats> stats() override {
    proto::Request r;
    r.mutable_stats();
    auto resp = call(r, Clock::now() + opts_.call_timeout, "stats", /*allowed_after_abort=*/true);
    if (!resp) return resp.error();
    const auto& s = resp->stats();
    DaemonStats d;
    d.connections = s.connections();
    d.ranks_connected = s.ranks_connected();
    d.keys = s.keys();
    d.bytes_stored = s.bytes_stored();
    d.requests = s.requests();
    d.text = s.text();
    d.report_json = s.report_json();
    return d;
  }

  Result<void> goodbye() override {
    if (goodbye_sent_.exchange(true)) return {};
    proto::Request r;
    r.mutable_goodbye();
    if (opts_.role == PeerRole::rank &&
        !detail::rank_progress().fill(*r.mutable_goodbye()->mutable_progress()))
      r.mutable_goodbye()->clear_progress();
    auto resp =
        call(r, Clock::now() + std::min<milliseconds>(opts_.call_timeout, milliseconds(5'000)),
             "goodbye",
             /*allowed_after_abort=*/true);
    if (!resp && resp.error().code != Errc::connection) return resp.error();
    return {};
  }

  void on_abort(std::function<void(const Error&)> handler) override {
    std::optional<Error> late;
    {
      std::lock_guard lk(mu_);
      handler_ = std::move(handler);
      if (fatal_ && !delivered_) {
        delivered_ = true;
        late = fatal_;
      }
    }
    if (late && handler_) {
      try {
        handler_(*late);
      } catch (...) {
      }
    }
  }

 private:
  struct Pending {
    bool done = false;
    proto::Response resp;
  };

  Result<proto::Response> call(proto::Request& req, Clock::time_point deadline,
                               const std::string& what, bool allowed_after_abort = false) {
    auto slot = std::make_shared<Pending>();
    uint64_t id = 0;
    {
      std::lock_guard lk(mu_);
      if (fatal_ && !(allowed_after_abort && fatal_->code == Errc::aborted)) return *fatal_;
      id = next_id_++;
      pending_.emplace(id, slot);
    }
    req.set_id(id);
    std::string frame;
    rdv::append_frame(req, frame);
    Result<void> sent = send_frame(frame, deadline);
    std::unique_lock lk(mu_);
    if (!sent) {
      pending_.erase(id);
      // The peer closed: what it sent before (an abort naming the step's
      // first failure) is the answer, once the I/O thread has read it all.
      if (sent.error().code != Errc::timeout) {
        cv_.wait_until(lk, deadline, [&] { return fatal_ || closed_; });
        if (fatal_ && !(allowed_after_abort && fatal_->code == Errc::aborted)) return *fatal_;
      }
      return wrap_error(sent.error(), what + ": " + sent.error().message);
    }
    cv_.wait_until(lk, deadline, [&] {
      return slot->done || (fatal_ && !(allowed_after_abort && fatal_->code == Errc::aborted)) ||
             closed_;
    });
    pending_.erase(id);
    if (slot->done) {
      if (slot->resp.code() != proto::OK) return rdv::error_from(slot->resp);
      return std::move(slot->resp);
    }
    if (fatal_ && !(allowed_after_abort && fatal_->code == Errc::aborted)) return *fatal_;
    if (closed_)
      return make_error(Errc::connection, what + ": the connection to " + peer() + " is closed");
    return make_error(Errc::timeout, what + ": no reply from " + peer() + " before the deadline");
  }

  Result<void> send_frame(const std::string& frame, Clock::time_point deadline) {
    Result<void> r;
    {
      std::lock_guard wl(write_mu_);
      if (broken_)
        return make_error(Errc::connection, "the connection to " + peer() + " is broken");
      r = rdv::write_all(fd_.get(), frame.data(), frame.size(), deadline);
      // A frame cut short leaves the stream unframed: the connection is done.
      if (!r) {
        broken_ = true;
        // A peer that closed (EPIPE, a reset) may have said why first: an
        // abort push in our receive queue names the step's first failure,
        // which the I/O thread reads before the end of the stream.
        shutdown(fd_.get(), r.error().code == Errc::timeout ? SHUT_RDWR : SHUT_WR);
      }
    }
    if (!r && r.error().code == Errc::timeout) {
      fail_all(make_error(Errc::connection, "cannot send to " + peer() + ": " + r.error().message));
    }
    return r;
  }

  void fail_all(Error e) {
    std::function<void(const Error&)> h;
    {
      std::lock_guard lk(mu_);
      if (fatal_) return;
      fatal_ = e;
      if (handler_ && !delivered_) {
        delivered_ = true;
        h = handler_;
      }
    }
    cv_.notify_all();
    if (!h) return;
    try {
      h(e);
    } catch (...) {
      // The handler is the caller's code; nothing may escape the I/O thread.
    }
  }

  void handle(proto::Response r) {
    if (r.id() == 0) {
      if (r.code() == proto::ABORTED && r.has_hang() && opts_.role == PeerRole::rank &&
          r.hang().rank() == opts_.rank)
        detail::end_hanging_rank(opts_.rank, r.message());  // does not return
      if (r.code() == proto::ABORTED) fail_all(rdv::error_from(r));
      // Keepalives need nothing more; other pushes (a closing notice) are followed by EOF.
      return;
    }
    std::optional<Error> aborted_reply;
    {
      std::lock_guard lk(mu_);
      auto it = pending_.find(r.id());
      if (it == pending_.end()) return;  // the caller gave up already
      it->second->done = true;
      it->second->resp = std::move(r);
      if (it->second->resp.code() == proto::ABORTED) {
        aborted_reply = rdv::error_from(it->second->resp);
      }
    }
    cv_.notify_all();
    if (aborted_reply) fail_all(*aborted_reply);
  }

  // Who this client talks to, for messages: the step's daemon, or its node's agent.
  std::string peer() const {
    if (!opts_.agent_socket.empty()) return "the node agent at " + opts_.agent_socket;
    return "dp-rendezvousd at " + opts_.host + ":" + std::to_string(opts_.port);
  }

  // Nothing may escape the I/O thread: a failure here fails the connection.
  void io_loop() noexcept {
    try {
      io_loop_body();
    } catch (const std::bad_alloc&) {
      fail_all(make_error(Errc::internal, "out of memory in the rendezvous client's I/O thread"));
    } catch (...) {
      fail_all(
          make_error(Errc::internal, "unexpected failure in the rendezvous client's I/O thread"));
    }
    {
      std::lock_guard lk(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

  // Hands every buffered response to its caller; false when the stream went bad.
  bool deliver_buffered() {
    for (;;) {
      auto r = reader_.next();
      if (!r) {
        fail_all(make_error(Errc::protocol, "bad reply from " + peer() + ": " + r.error().message +
                                                "; is it the same slurm-dp release?"));
        return false;
      }
      if (!*r) return true;
      handle(std::move(**r));
    }
  }

  void io_loop_body() {
    if (!deliver_buffered()) return;
    auto now = Clock::now();
    auto next_beat = now + opts_.heartbeat_interval;
    // Anything from the daemon (or the agent): a reply or its keepalive.
    SilenceWatch peer_silence(opts_.daemon_silence_limit, opts_.heartbeat_interval, now);
    char buf[65536];
    std::string beat;
    {
      proto::Request hb;
      hb.mutable_heartbeat();
      rdv::append_frame(hb, beat);
    }
    while (!stop_.load()) {
      auto wake_at = next_beat;
      wake_at = std::min(wake_at, peer_silence.deadline());
      pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
      const int pr = poll(fds, 2, rdv::ms_until(wake_at));
      if (stop_.load()) break;
      if (pr < 0 && errno != EINTR) break;
      now = Clock::now();
      peer_silence.woke(now);
      if (now >= next_beat) {
        // A rank's heartbeat carries its collective counters (hang and straggler detection).
        if (opts_.role == PeerRole::rank) detail::heartbeat_frame(beat);
        (void)send_frame(beat, now + opts_.heartbeat_interval);
        next_beat = now + opts_.heartbeat_interval;
      }
      if (pr > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (n <= 0) {
          connection_ended();
          return;
        }
        peer_silence.heard(now);
        if (auto r = reader_.feed(buf, static_cast<size_t>(n)); !r) {
          fail_all(wrap_error(r.error(), "reading from " + peer() + ": " + r.error().message));
          return;
        }
        if (!deliver_buffered()) return;
        continue;
      }
      if (peer_silence.over(now)) {
        fail_all(make_error(
            Errc::connection,
            peer() + " sent nothing for " +
                std::to_string(
                    std::chrono::duration_cast<milliseconds>(peer_silence.silent(now)).count()) +
                " ms although it pings every second: the daemon or the host of srun is stopped, "
                "frozen or unreachable"));
        shutdown(fd_.get(), SHUT_RDWR);
        return;
      }
    }
  }

  // EOF or error: after our goodbye this is the normal end.
  void connection_ended() {
    if (goodbye_sent_.load()) {
      std::lock_guard lk(mu_);
      closed_ = true;
    } else {
      fail_all(make_error(Errc::connection,
                          "lost the connection to " + peer() +
                              (opts_.agent_socket.empty()
                                   ? ": the daemon exited (the step ended or srun died)"
                                   : ": the agent exited (the step ended, or its node failed)")));
    }
    cv_.notify_all();
  }

  ClientOptions opts_;
  UniqueFd fd_;
  UniqueFd wake_fd_;
  rdv::ReplyReader reader_;  // used by the I/O thread only
  const pid_t owner_pid_ = getpid();
  std::thread io_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> goodbye_sent_{false};
  std::mutex write_mu_;
  bool broken_ = false;  // guarded by write_mu_
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::optional<Error> fatal_;
  bool closed_ = false;
  bool delivered_ = false;
  std::function<void(const Error&)> handler_;
};

}  // namespace

Result<void> RendezvousClient::parse_address(std::string_view addr, ClientOptions& opts) {
  const std::string shown = "DP_RDV_ADDR '" + std::string(addr) + "'";
  std::string_view host;
  std::string_view port;
  if (!addr.empty() && addr.front() == '[') {
    const size_t close = addr.find(']');
    if (close == std::string_view::npos || close + 1 >= addr.size() || addr[close + 1] != ':') {
      return make_error(Errc::invalid_argument, shown + ": expected [ipv6]:port");
    }
    host = addr.substr(1, close - 1);
    port = addr.substr(close + 2);
  } else {
    const size_t colon = addr.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return make_error(Errc::invalid_argument, shown + ": expected host:port");
    }
    host = addr.substr(0, colon);
    port = addr.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return make_error(Errc::invalid_argument, shown + ": write IPv6 addresses as [addr]:port");
    }
  }
  auto p = parse_whole_number(port, 1, 65535);
  if (host.empty() || !p) {
    return make_error(Errc::invalid_argument,
                      shown + ": expected host:port with a port in 1..65535");
  }
  opts.host = std::string(host);
  opts.port = static_cast<uint16_t>(*p);
  return {};
}

Result<std::unique_ptr<RendezvousClient>> RendezvousClient::connect(const ClientOptions& in) {
  ClientOptions o = in;
  const bool local = !o.agent_socket.empty();
  if (!local && (o.host.empty() || o.port == 0)) {
    return make_error(Errc::invalid_argument,
                      "rendezvous client: no daemon address (DP_RDV_ADDR host:port)");
  }
  if (o.secret.empty())
    return make_error(Errc::invalid_argument, "rendezvous client: empty secret (DP_RDV_SECRET)");
  if (o.role == PeerRole::rank && (o.rank < 0 || (o.world_size > 0 && o.rank >= o.world_size))) {
    return make_error(Errc::invalid_argument, "rendezvous client: RANK " + std::to_string(o.rank) +
                                                  " is outside 0..WORLD_SIZE-1 (" +
                                                  std::to_string(o.world_size) + ")");
  }
  if (o.heartbeat_interval.count() <= 0) o.heartbeat_interval = milliseconds(1'000);
  if (o.max_reply_frame < rdv::kHelloFrameLimit) {
    return make_error(Errc::invalid_argument, "rendezvous client: max_reply_frame " +
                                                  std::to_string(o.max_reply_frame) +
                                                  " is below the smallest useful frame (" +
                                                  std::to_string(rdv::kHelloFrameLimit) + ")");
  }
  if (o.hostname.empty()) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    o.hostname = name;
  }
  auto linked = connect_and_hello(o);
  DP_TRY(linked);
  UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return make_error(Errc::internal, "eventfd failed");
  return std::unique_ptr<RendezvousClient>(new SocketRendezvousClient(
      o, std::move(linked->socket), std::move(wake), std::move(linked->reader)));
}

}  // namespace dp
