// libFuzzer target: the node agent's local protocol (agent/agent_core). The
// input is a script of operations on up to four local connections (bytes
// through the same FrameDecoder the agent's server uses, disconnects), the
// daemon's answers (arbitrary Response frames), task exits and ticks. The
// core must never crash or write to a connection it closed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "agent_core.hpp"
#include "frame_codec.hpp"
#include "hello_proof.hpp"

namespace {

using dp::agent::Clock;
using dp::agent::ConnId;

struct Sink : dp::agent::AgentOutbox {
  std::set<ConnId> closed;
  void to_rank(ConnId c, const dp::proto::Response& r) override {
    if (closed.count(c)) std::abort();  // the core wrote to a connection it closed
    std::string frame;
    if (!dp::rdv::append_frame(r, frame)) std::abort();
  }
  void close_rank(ConnId c) override { closed.insert(c); }
  void to_daemon(const dp::proto::Request& r) override {
    std::string frame;
    if (!dp::rdv::append_frame(r, frame)) std::abort();
  }
};

std::string fixed_nonce() { return std::string(dp::rdv::kNonceBytes, 'z'); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dp::agent::AgentConfig cfg;
  cfg.secret = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";
  cfg.host = "fuzz";
  cfg.world_size = 4;
  cfg.node_ranks = {0, 1};
  cfg.max_frame_bytes = 65536;
  cfg.make_nonce = fixed_nonce;  // make_seeds-style proofs can use it
  Sink sink;
  auto now = Clock::time_point{} + std::chrono::hours(1);
  dp::agent::AgentCore core(cfg, sink, now);
  dp::proto::Response challenge;
  challenge.set_challenge(fixed_nonce());
  core.on_daemon_response(challenge, now);
  dp::proto::Response hello_ok;
  hello_ok.set_id(1);
  core.on_daemon_response(hello_ok, now);

  constexpr int kConns = 4;
  ConnId ids[kConns];
  dp::rdv::FrameDecoder decoders[kConns] = {
      dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096),
      dp::rdv::FrameDecoder(4096)};
  ConnId next = 1;
  for (auto& id : ids) core.on_rank_connect(id = next++, now);

  size_t pos = 0;
  while (pos < size) {
    const uint8_t op = data[pos++];
    const int conn = op & 3;
    size_t len = pos < size ? data[pos++] : 0;
    len = std::min(len, size - pos);
    const char* bytes = reinterpret_cast<const char*>(data + pos);
    switch ((op >> 2) % 5) {
      case 0:
      case 1: {  // bytes from a local rank
        pos += len;
        if (!core.knows(ids[conn])) break;
        auto& dec = decoders[conn];
        dec.feed(bytes, len);
        for (;;) {
          if (!core.knows(ids[conn])) break;
          dec.set_max_frame_bytes(core.max_frame_bytes(ids[conn]));
          std::string_view payload;
          const auto st = dec.next(payload);
          if (st == dp::rdv::FrameDecoder::Status::need_more) break;
          if (st == dp::rdv::FrameDecoder::Status::too_large) {
            core.on_rank_oversized(ids[conn], dec.frame_length());
            break;
          }
          core.on_rank_frame(ids[conn], payload, now);
        }
        break;
      }
      case 2: {  // the daemon answers (a validated Response, as ReplyReader gives)
        pos += len;
        dp::proto::Response r;
        if (r.ParseFromArray(bytes, static_cast<int>(len))) core.on_daemon_response(r, now);
        break;
      }
      case 3:  // time passes; a task ends
        now += std::chrono::milliseconds(len * 50);
        core.on_tick(now);
        if (len & 1) core.on_task_exit(conn, static_cast<int>(len << 4), now);
        break;
      case 4:  // the rank goes away, and a new connection comes
        core.on_rank_disconnect(ids[conn], now);
        ids[conn] = next++;
        decoders[conn] = dp::rdv::FrameDecoder(4096);
        core.on_rank_connect(ids[conn], now);
        break;
    }
  }
  return 0;
}
