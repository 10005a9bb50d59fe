// libFuzzer target: frame decoding and request handling of dp-rendezvousd.
// The input is a script of operations on up to four simulated connections:
// feed bytes (through the same FrameDecoder the server uses), tick the
// clock, disconnect, reconnect. The Broker must never crash, leak state
// across closed connections, or send to a connection it closed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "broker.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"

namespace {

using dp::daemon::Clock;
using dp::daemon::ConnId;

struct Sink : dp::daemon::Outbox {
  std::set<ConnId> closed;
  void send(ConnId c, const dp::proto::Response& r) override {
    if (closed.count(c)) std::abort();  // the broker wrote to a connection it closed
    std::string frame;
    if (!dp::rdv::append_frame(r, frame)) std::abort();
  }
  void close(ConnId c) override { closed.insert(c); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dp::daemon::BrokerConfig cfg;
  cfg.world_size = 2;
  cfg.secret = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";
  cfg.job_id = "fuzz";
  cfg.step_id = "0";
  cfg.limits.max_value_bytes = 4096;
  cfg.limits.max_total_bytes = 65536;
  cfg.limits.max_unauthenticated = 3;  // eviction is reached with four connections
  cfg.make_nonce = [] {
    return std::string(dp::rdv::kNonceBytes, 'z');
  };  // make_seeds' proofs use it
  Sink sink;
  auto now = Clock::time_point{} + std::chrono::hours(1);
  dp::daemon::Broker broker(cfg, sink, now);

  constexpr int kConns = 4;
  ConnId ids[kConns];
  dp::rdv::FrameDecoder decoders[kConns] = {
      dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096),
      dp::rdv::FrameDecoder(4096)};
  ConnId next = 1;
  // Slot 3 connects first, so the fourth connection evicts it (seeds use 0..2).
  for (int i : {3, 0, 1, 2}) {
    ids[i] = next++;
    broker.on_connect(ids[i], now);
  }
  auto reopen = [&](int i) {
    ids[i] = next++;
    decoders[i] = dp::rdv::FrameDecoder(4096);
    broker.on_connect(ids[i], now);
  };

  size_t pos = 0;
  while (pos < size) {
    const uint8_t op = data[pos++];
    const int conn = op & 3;
    switch ((op >> 2) % 4) {
      case 0:
      case 1: {  // feed a chunk
        if (pos >= size) break;
        size_t len = data[pos++];
        if (len == 255 && pos + 2 <= size) {  // long chunk
          len = (size_t{data[pos]} << 8) | data[pos + 1];
          pos += 2;
        }
        len = std::min(len, size - pos);
        if (!broker.knows(ids[conn])) {
          pos += len;
          break;  // the server stops reading a closed connection
        }
        auto& dec = decoders[conn];
        dec.feed(reinterpret_cast<const char*>(data + pos), len);
        pos += len;
        for (;;) {
          if (!broker.knows(ids[conn])) break;
          dec.set_max_frame_bytes(broker.max_frame_bytes(ids[conn]));
          std::string_view payload;
          const auto st = dec.next(payload);
          if (st == dp::rdv::FrameDecoder::Status::need_more) break;
          if (st == dp::rdv::FrameDecoder::Status::too_large) {
            broker.on_oversized_frame(ids[conn], dec.frame_length(),
                                      broker.max_frame_bytes(ids[conn]));
            break;
          }
          broker.on_frame(ids[conn], payload, now);
        }
        dec.shrink_if_idle();
        break;
      }
      case 2: {  // time passes
        const int step = pos < size ? data[pos++] : 1;
        now += std::chrono::milliseconds(step * 50);
        broker.on_tick(now);
        break;
      }
      case 3:  // the peer goes away (or comes back as a new connection)
        if (broker.knows(ids[conn])) {
          broker.on_disconnect(ids[conn], now);
        }
        reopen(conn);
        break;
    }
  }
  (void)broker.stats();
  return 0;
}
