// One peer connection of a per-step service's libevent loop (dp-rendezvousd's
// ranks, dp-nodeagent's local ranks): its socket and events, the decoder of
// the frames it sends, and what is still to be written to it. Each server
// keeps the policy (limits, eviction, when to close); this is the shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "frame_codec.hpp"

struct event;

namespace dp::service {

template <class Server>
struct FrameConn {
  Server* server = nullptr;
  int fd = -1;
  uint64_t id = 0;
  event* rd = nullptr;
  event* wr = nullptr;  // created on the first short write
  rdv::FrameDecoder decoder{4096};
  std::string out;
  size_t out_pos = 0;
  bool closing = false;
};

// The libevent callback for one connection's event: hands it to the server's
// member `handle` (libevent's arg is the connection).
template <class Conn, auto handle>
void on_conn_event(int, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  (c->server->*handle)(*c);
}

}  // namespace dp::service
