// AgentServer's PyTorch store clients (--dp-store=step): who may connect,
// and their bytes in and out. What the bytes mean is the StoreFront's.
#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "agent_server.hpp"
#include "dp/tcp_sockets.hpp"
#include "store_client.hpp"

namespace dp::agent {

// Only the step's user on this node: the kernel's socket table names the
// owner of the other end before a byte is read; another user's connection,
// or one from outside this node's network namespace, is closed unread.
void AgentServer::admit_store(service::UniqueFd fd) {
  auto peer = local_tcp_peer(fd.get());
  if (!peer || peer->uid != getuid()) {
    if (core_.note_store_stranger() == 1) {
      std::fprintf(stderr,
                   "dp-nodeagent: job %u step %u node %s: refused a connection to the step's "
                   "PyTorch store: %s (further ones are counted in the step report)\n",
                   settings_.job, settings_.step, settings_.host.c_str(),
                   peer ? ("it belongs to uid " + std::to_string(peer->uid)).c_str()
                        : peer.error().message.c_str());
    }
    return;
  }
  auto c = service::open_conn<StoreConn, &AgentServer::read_store>(*this, base_.get(),
                                                                   std::move(fd), next_id_++);
  if (!c) return;
  const ConnId id = c->id;
  store_conns_.emplace(id, std::move(c));
  store_.on_connect(id);
}

void AgentServer::read_store(StoreConn& c) {
  char buf[65536];
  const ConnId id = c.id;
  const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n > 0) return store_.on_bytes(id, std::string_view(buf, static_cast<size_t>(n)));
  store_.on_disconnect(id);
  store_conns_.erase(id);
}

void AgentServer::flush_store(StoreConn& c) {
  if (!service::make_writer<&AgentServer::flush_store>(c, base_.get()))
    shutdown(c.fd.get(), SHUT_RDWR);
  const bool alive = flush(c.fd.get(), c.out, c.out_pos, c.wr.get());
  if (c.closing && (!alive || c.out.empty())) store_conns_.erase(c.id);
}

void AgentServer::to_client(ConnId conn, std::string_view bytes) {
  auto it = store_conns_.find(conn);
  if (it == store_conns_.end()) return;
  StoreConn& c = *it->second;
  if (c.out.size() - c.out_pos + bytes.size() > kMaxOutBytes) {
    shutdown(c.fd.get(), SHUT_RDWR);  // its read side ends: the front hears of it there
    return;
  }
  c.out.append(bytes);
  flush_store(c);
}

void AgentServer::send_soon() {
  if (store_due_ev_) event_active(store_due_ev_.get(), EV_TIMEOUT, 0);
}

void AgentServer::on_store_due(evutil_socket_t, short, void* arg) {
  auto* a = static_cast<AgentServer*>(arg);
  a->hold_daemon_writes_ = true;  // the pass's requests in one write
  a->store_.send_due();
  a->hold_daemon_writes_ = false;
  if (a->daemon_fd_ &&
      !a->flush(a->daemon_fd_.get(), a->daemon_out_, a->daemon_out_pos_, a->daemon_wr_.get()))
    a->daemon_failed(errno, "cannot write to the step's daemon");
}

// The front refused a request (or bytes) of this client: its connection
// alone closes, and the line naming whose request and why reaches the step's
// end through the daemon (this log is the agent's own).
void AgentServer::close_client(ConnId conn, const std::string& why) {
  auto it = store_conns_.find(conn);
  if (it == store_conns_.end()) return;
  StoreConn& c = *it->second;
  // The rank is looked up in /proc: for the first few refusals only.
  constexpr uint64_t kNamed = 16;
  const std::string who = ++store_refusals_ <= kNamed ? store_client_name(c.fd.get()) : "a client";
  const std::string line = "refused " + who + ": " + why;
  std::fprintf(stderr, "dp-nodeagent: job %u step %u node %s: PyTorch's store: %s\n", settings_.job,
               settings_.step, settings_.host.c_str(), line.c_str());
  core_.note_store_refusal(line);
  c.closing = true;
  if (c.rd) event_del(c.rd.get());
  flush_store(c);
}

}  // namespace dp::agent
