// One peer connection of a per-step service's libevent loop (dp-rendezvousd's
// ranks, dp-nodeagent's local ranks): its socket and events, the decoder of
// the frames it sends, and what is still to be written to it. Each server
// keeps the policy (limits, eviction, when to close); this is the shared state.
// Dropping the connection frees its events and closes its socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "frame_codec.hpp"
#include "handles.hpp"

namespace dp::service {

// What open_conn and make_writer use of any connection, framed or not.
template <class Server>
struct ConnBase {
  Server* server = nullptr;
  UniqueFd fd;
  uint64_t id = 0;
  EventPtr rd;  // after fd: freed before it is closed
  EventPtr wr;  // made on the first short write
};

template <class Server>
struct FrameConn : ConnBase<Server> {
  rdv::FrameDecoder decoder{4096};
  std::string out;
  size_t out_pos = 0;
  bool closing = false;
};

// The libevent callback for one connection's event: hands it to the server's
// member `handle` (libevent's arg is the connection).
template <class Conn, auto handle>
void on_conn_event(evutil_socket_t, short, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  (c->server->*handle)(*c);
}

// An accepted connection of `server`, given to `read` whenever readable.
// Null when libevent cannot watch it (the socket is closed then).
template <class Conn, auto read, class Server>
std::unique_ptr<Conn> open_conn(Server& server, event_base* base, UniqueFd fd, uint64_t id) {
  auto c = std::make_unique<Conn>();
  c->server = &server;
  c->id = id;
  c->rd = watch(base, fd.get(), EV_READ | EV_PERSIST, &on_conn_event<Conn, read>, c.get());
  if (!c->rd) return nullptr;
  c->fd = std::move(fd);
  return c;
}

// The event that gives `c` to `write` when it has room again, made on the
// first use. False when libevent cannot make it.
template <auto write, class Conn>
bool make_writer(Conn& c, event_base* base) {
  if (!c.wr)
    c.wr = make_event(base, c.fd.get(), EV_WRITE | EV_PERSIST, &on_conn_event<Conn, write>, &c);
  return c.wr != nullptr;
}

}  // namespace dp::service
