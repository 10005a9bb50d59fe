// libFuzzer target: frame decoding and request handling of dp-rendezvousd.
// The input is a script of operations on up to four simulated connections:
// feed bytes (through the same FrameDecoder the server uses), tick the
// clock, disconnect, reconnect. The Broker must never crash, leak state
// across closed connections, or send to a connection it closed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "broker.hpp"
#include "fuzz_harness.hpp"

namespace {

using dp::daemon::ConnId;

struct Sink : dp::daemon::Outbox, dp::fuzz::ClosedConns<ConnId> {
  void send(ConnId c, const dp::proto::Response& r) override { deliver(c, r); }
  void close(ConnId c) override { mark_closed(c); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dp::daemon::BrokerConfig cfg;
  cfg.world_size = 2;
  cfg.secret = dp::fuzz::kSecret;
  cfg.job_id = "fuzz";
  cfg.step_id = "0";
  cfg.limits.max_key_bytes = 4096;  // frames over 9 KiB are refused and skipped
  cfg.limits.max_value_bytes = 4096;
  cfg.limits.max_request_bytes = 4096;
  cfg.limits.max_total_bytes = 65536;
  cfg.limits.max_unauthenticated = 3;      // eviction is reached with four connections
  cfg.make_nonce = dp::fuzz::fixed_nonce;  // make_seeds' proofs use it
  Sink sink;
  auto now = dp::fuzz::kStartTime;
  dp::daemon::Broker broker(cfg, sink, now);

  dp::fuzz::Connections<ConnId> conns;
  // Slot 3 connects first, so the fourth connection evicts it (seeds use 0..2).
  for (int i : {3, 0, 1, 2}) broker.on_connect(conns.open(i), now);

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
        const bool fed = conns.feed(
            conn, reinterpret_cast<const char*>(data + pos), len, broker,
            [&](ConnId id, size_t length, std::string_view head) {
              return broker.on_oversized_frame(id, static_cast<uint32_t>(length),
                                               broker.max_frame_bytes(id), head);
            },
            [&](ConnId id, std::string_view payload) { broker.on_frame(id, payload, now); });
        pos += len;
        if (fed) conns.decoders[conn].shrink_if_idle();
        break;
      }
      case 2: {  // time passes
        const int step = pos < size ? data[pos++] : 1;
        now += std::chrono::milliseconds(step * 50);
        broker.on_tick(now);
        break;
      }
      case 3:  // the peer goes away (or comes back as a new connection)
        if (broker.knows(conns.ids[conn])) {
          broker.on_disconnect(conns.ids[conn], now);
        }
        broker.on_connect(conns.open(conn), now);
        break;
    }
  }
  (void)broker.stats();
  return 0;
}
