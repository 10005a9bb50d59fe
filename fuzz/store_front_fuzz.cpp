// libFuzzer target: the node agent's PyTorch store (agent/store_front) between
// its node's TCPStore clients and the daemon. The input is a script: bytes
// from one of four clients (any dialect, any garbage), a client that leaves
// (and a new one in its place), the end of an event-loop pass (send_due), and
// the daemon's answer to any request in flight (OK or an error, with fields
// from the input), in any order. The front must never crash, never write to
// a client it closed, and hold nothing (no client, fold or request in
// flight) once its clients left and the daemon answered: nothing to leak in
// an agent that lives as long as its step.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent_harness.hpp"
#include "store_front.hpp"
#include "torchstore_limits.hpp"

namespace {

using dp::agent::ConnId;

struct Sink : dp::agent::AgentOutbox, dp::agent::StoreOutbox {
  void to_rank(ConnId, const dp::proto::Response&) override {}
  void close_rank(ConnId) override {}
  void to_daemon(const dp::proto::Request& r) override {
    dp::fuzz::encode_or_abort(r);
    in_flight.push_back(r.id());
  }
  void to_client(ConnId c, std::string_view bytes) override {
    if (closed.count(c) != 0 || bytes.empty()) std::abort();  // a closed client written to
  }
  void close_client(ConnId c, const std::string&) override { closed.insert(c); }
  void send_soon() override { due = true; }

  std::vector<uint64_t> in_flight;  // ids the daemon has not answered
  std::set<ConnId> closed;
  bool due = false;
};

// The daemon's answer to one request in flight, shaped by the input.
dp::proto::Response answer(uint64_t id, const uint8_t* p, size_t n) {
  dp::proto::Response r;
  r.set_id(id);
  const uint8_t kind = n > 0 ? p[0] : 0;
  if (kind % 5 == 4) {
    r.set_code(static_cast<dp::proto::Code>(1 + kind % 11));
    r.set_message("refused by the fuzzer");
  }
  int64_t number = 0;
  for (size_t i = 1; i < n && i < 9; ++i) number = (number << 8) | p[i];
  r.set_number(number);
  r.set_flag((kind & 8) != 0);
  if (n > 9) r.set_value(std::string(reinterpret_cast<const char*>(p + 9), n - 9));
  if (kind & 16) r.add_values("v");
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Sink sink;
  dp::agent::AgentCore core(dp::fuzz::agent_config(), sink, dp::fuzz::kStartTime);
  dp::fuzz::link_ready(core);
  const auto now = dp::fuzz::kStartTime;
  sink.in_flight.clear();  // the hello
  // A daemon frame smaller than a whole request: some are refused for their client.
  dp::agent::StoreFront front(core, sink, dp::fuzz::small_store_limits(), 1024 + 512);

  ConnId clients[4];
  ConnId next = 100;
  for (auto& c : clients) front.on_connect(c = next++);

  dp::fuzz::Records records(data, size);
  for (dp::fuzz::Record rec; records.next(rec);) {
    const int slot = rec.op & 3;
    const uint8_t* bytes = rec.bytes;
    const size_t len = rec.len;
    switch ((rec.op >> 2) % 6) {
      case 0:
      case 1:  // a client's bytes
        front.on_bytes(clients[slot], std::string_view(reinterpret_cast<const char*>(bytes), len));
        break;
      case 2:  // the client leaves; another takes its place
        front.on_disconnect(clients[slot]);
        front.on_connect(clients[slot] = next++);
        break;
      case 3:  // the end of the event loop's pass
        if (sink.due) {
          sink.due = false;
          front.send_due();
        }
        break;
      case 4: {  // the daemon answers one request in flight
        if (sink.in_flight.empty()) break;
        const size_t i = (len > 0 ? bytes[0] : 0) % sink.in_flight.size();
        const uint64_t id = sink.in_flight[i];
        sink.in_flight.erase(sink.in_flight.begin() + static_cast<std::ptrdiff_t>(i));
        core.on_daemon_response(answer(id, len > 0 ? bytes + 1 : bytes, len > 0 ? len - 1 : 0),
                                now);
        break;
      }
      default:  // an answer to an id nobody asked for
        core.on_daemon_response(answer(1000000 + len, bytes, len), now);
        break;
    }
  }
  // Every client leaves and the daemon answers what is left: nothing stays.
  for (ConnId c : clients) front.on_disconnect(c);
  for (int round = 0; round < 64 && (!sink.in_flight.empty() || sink.due); ++round) {
    if (sink.due) {
      sink.due = false;
      front.send_due();
    }
    auto ids = sink.in_flight;
    sink.in_flight.clear();
    for (uint64_t id : ids) core.on_daemon_response(answer(id, nullptr, 0), now);
  }
  if (!front.idle()) std::abort();
  return 0;
}
