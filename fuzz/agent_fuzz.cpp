// libFuzzer target: the node agent's local protocol (agent/agent_core). The
// input is a script of operations on up to four local connections (bytes
// through the same FrameDecoder the agent's server uses, disconnects), the
// daemon's answers (arbitrary Response frames), task exits and ticks. The
// core must never crash or write to a connection it closed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent_harness.hpp"

namespace {

using dp::agent::ConnId;

struct Sink : dp::agent::AgentOutbox, dp::fuzz::ClosedConns<ConnId> {
  void to_rank(ConnId c, const dp::proto::Response& r) override { deliver(c, r); }
  void close_rank(ConnId c) override { mark_closed(c); }
  void to_daemon(const dp::proto::Request& r) override { dp::fuzz::encode_or_abort(r); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dp::agent::AgentConfig cfg = dp::fuzz::agent_config();
  cfg.max_frame_bytes = 65536;
  Sink sink;
  auto now = dp::fuzz::kStartTime;
  dp::agent::AgentCore core(cfg, sink, now);
  dp::fuzz::link_ready(core);

  dp::fuzz::Connections<ConnId> conns;
  for (int i = 0; i < conns.kCount; ++i) core.on_rank_connect(conns.open(i), now);

  dp::fuzz::Records records(data, size);
  for (dp::fuzz::Record rec; records.next(rec);) {
    const int conn = rec.op & 3;
    const size_t len = rec.len;
    const char* bytes = reinterpret_cast<const char*>(rec.bytes);
    switch ((rec.op >> 2) % 5) {
      case 0:
      case 1: {  // bytes from a local rank
        conns.feed(
            conn, bytes, len, core,
            [&](ConnId id, size_t length, std::string_view head) {
              return core.on_rank_oversized(id, static_cast<uint32_t>(length), head);
            },
            [&](ConnId id, std::string_view payload) { core.on_rank_frame(id, payload, now); });
        break;
      }
      case 2: {  // the daemon answers (a validated Response, as ReplyReader gives)
        dp::proto::Response r;
        if (r.ParseFromArray(bytes, static_cast<int>(len))) core.on_daemon_response(r, now);
        break;
      }
      case 3:  // time passes; Slurm signals the step; a task ends
        now += std::chrono::milliseconds(len * 50);
        core.on_tick(now);
        if (len & 2) core.on_step_signal(static_cast<int>(len % 65), now);
        if (len & 1) core.on_task_exit(conn, static_cast<int>(len << 4), now);
        break;
      case 4:  // the rank goes away, and a new connection comes
        core.on_rank_disconnect(conns.ids[conn], now);
        core.on_rank_connect(conns.open(conn), now);
        break;
    }
  }
  return 0;
}
