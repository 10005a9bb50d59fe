// The step's store for unmodified PyTorch programs (--dp-store=step): the
// node's TCPStore clients (every rank is one, TORCHELASTIC_USE_AGENT_STORE)
// speak PyTorch's wire protocol (torchstore/) to their node's agent, which
// keeps the store in the step's daemon (SPACE_TORCH) over the node's one
// authenticated connection. Pure, like AgentCore: the I/O layer feeds it
// connections and bytes; it answers through StoreOutbox.
//
// Work per node, not per rank: identical reads (GET, WAIT, CHECK, GETNUMKEYS,
// MULTI_GET, QUEUE_LEN of the same keys) ride one upstream request: those of
// one burst of input (the I/O loop's pass: send_due) together, those that
// arrive while it is on its way on the next one, sent when its answer is in;
// ADDs of one key likewise become one ADD of their sum, whose result is
// handed out in arrival order (ADD 0, PyTorch's barrier poll, among them).
// Every rider arrived before its request left and is answered after the
// daemon applied it, so each answer is one PyTorch's own server could have
// given at some point of its call. Writes go one by one, in order, and
// after every read that arrived before them.
//
// PyTorch's get() is a WAIT and then a GET of the key, each a round trip.
// A one-key WAIT asks the daemon for the key's value too (Wait.value), and
// when the client's next request is the GET of that key, that value answers
// it: the value at a point inside that get() call. Any other request in
// between (PyTorch's own wait() then, later, its get(): a second WAIT) drops
// it; so does a daemon that sends none (before Wait.value, or only a queue of
// that name holds items): the GET is then read upstream.
//
// A request is its client's, never the node's: one over the limits (the
// parser's, PyTorch's own caps; or too large for the daemon's frame) or
// refused by the daemon closes that client alone, as PyTorch's server closes
// on an error, and the reason names the operation, key, size and limit.
// Replies leave in request order, as PyTorch's server answers each request
// as it reads it, except that a WAIT still pending holds none back: its
// server answers a WAIT when the keys are set, after whatever the client
// asked since (a 1.13 client whose wait timed out asks on).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent_core.hpp"
#include "dp/torchstore/parser.hpp"
#include "frame_limits.hpp"

namespace dp::agent {

class StoreOutbox {
 public:
  virtual ~StoreOutbox() = default;
  virtual void to_client(ConnId conn, std::string_view bytes) = 0;
  // Close after what was sent, as PyTorch's server closes on the same input;
  // `why` is for the agent's log. The front has already forgotten conn.
  virtual void close_client(ConnId conn, const std::string& why) = 0;
  // Reads wait to be sent: call send_due() once the input at hand is handled.
  virtual void send_soon() = 0;
};

struct StoreCounters {
  uint64_t connections = 0;     // clients served
  uint64_t requests = 0;        // their requests
  uint64_t upstream = 0;        // requests sent to the daemon for them
  uint64_t closed = 0;          // clients closed for bad input or a refused request
  uint64_t gets_with_wait = 0;  // GETs answered with the value their WAIT brought
};

class StoreFront final : public UpstreamSink {
 public:
  // The daemon's largest frame after hello (daemon/broker.hpp, the same defaults).
  static constexpr size_t kUpstreamFrameBytes = kStoreRequestBytes + rdv::kRequestEnvelopeBytes;

  StoreFront(AgentCore& link, StoreOutbox& out, torchstore::Limits limits = {},
             size_t upstream_frame_bytes = kUpstreamFrameBytes);

  void on_connect(ConnId conn);
  void on_bytes(ConnId conn, std::string_view bytes);
  void on_disconnect(ConnId conn);
  void on_upstream(uint64_t id, const proto::Response& r) override;
  // Sends the reads of the input handled since the last call, one request per fold.
  void send_due();

  bool serves(ConnId conn) const { return conns_.count(conn) != 0; }
  size_t clients() const { return conns_.size(); }
  // No client, fold or upstream request left: what a front whose clients
  // all left holds once the daemon answered (the fuzzer's leak check).
  bool idle() const { return conns_.empty() && folds_.empty() && sent_.empty(); }
  const StoreCounters& counters() const { return counters_; }

 private:
  using Op = torchstore::Op;
  // A reply owed to a client, in its request order.
  struct Slot {
    uint64_t seq = 0;
    bool wait = false;                 // a WAIT's: holds no later reply back
    std::optional<std::string> bytes;  // set once answered
  };
  struct Client {
    torchstore::RequestParser parser;
    // Usually one: a PyTorch client waits for each answer before it asks
    // again. A vector allocates nothing until used (the agent of a big
    // node, like the bench's thousands of simulated ones, makes many).
    std::vector<Slot> slots;
    uint64_t next_seq = 0;
    std::optional<uint64_t> wait_slot;  // its WAIT still unanswered (CANCEL_WAIT takes it)
    uint64_t received = 0;              // requests so far
    uint64_t wait_received = 0;         // `received` at its last WAIT
    // The key and value its last WAIT's answer brought, while that WAIT is
    // its latest request: PyTorch's get() is a WAIT and then a GET of the key.
    std::shared_ptr<const std::pair<std::string, std::string>> waited;
  };
  struct Rider {  // one client's request riding on an upstream one
    ConnId conn = 0;
    uint64_t slot = 0;
    Op op = Op::get;
    int64_t delta = 0;       // ADD
    bool announces = false;  // TCPStore's worker handshake (the daemon counts them)
  };
  // Identical reads (or one key's adds): the one in flight and the next.
  struct Fold {
    uint64_t inflight = 0;  // upstream id; 0: none
    bool due = false;       // in due_: `next` leaves at send_due
    std::vector<Rider> riding, next;
    Op op = Op::get;
    proto::Request request;  // what goes upstream for them (ADD: delta filled at send)
    std::string what;        // the request, as a refusal names it
  };
  // An upstream id: a fold's (by its name), or one write's rider.
  struct Sent {
    std::string fold;  // empty: `single`
    Rider single;
    bool answers = true;  // false: SET, APPEND, MULTI_SET, QUEUE_PUSH (no reply; errors close)
    std::string what;     // `single`'s request, as a refusal names it
  };

  void handle(ConnId conn, Client& c, torchstore::Request&& r);
  void local(ConnId conn, Client& c, const torchstore::Request& r);
  void write(ConnId conn, Client& c, torchstore::Request& r);
  void read(ConnId conn, Client& c, torchstore::Request& r);
  uint64_t take_slot(Client& c, bool wait = false);
  // False (and the client closed) when `up` would not fit the daemon's frame.
  bool fits_upstream(ConnId conn, const proto::Request& up, const std::string& what);
  void ride(torchstore::Request& r, Rider rider);
  void launch(const std::string& name, Fold& f);
  void answer_fold(const std::string& name, const proto::Response& r);
  void answer_adds(const std::vector<Rider>& riders, const proto::Response& r,
                   const std::string& what);
  void answer(const Rider& rider, const proto::Response& r, const std::string& what,
              const std::shared_ptr<const std::pair<std::string, std::string>>& waited = {});
  void fill(ConnId conn, uint64_t slot, std::string bytes);
  void cancel_wait(ConnId conn, Client& c);
  void drop_rider(ConnId conn, uint64_t slot);
  void close(ConnId conn, const std::string& why);
  uint64_t send(proto::Request req, Op op, Sent sent);

  AgentCore& link_;
  StoreOutbox& out_;
  torchstore::Limits limits_;
  size_t upstream_frame_bytes_;
  std::unordered_map<ConnId, Client> conns_;
  std::unordered_map<std::string, Fold> folds_;
  std::unordered_map<uint64_t, Sent> sent_;
  std::vector<std::string> due_;  // folds whose riders leave at send_due
  StoreCounters counters_;
};

}  // namespace dp::agent
