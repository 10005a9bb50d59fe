#include "store_front.hpp"

#include <algorithm>
#include <utility>

#include "dp/shown_value.hpp"
#include "dp/torchstore/reply.hpp"
#include "frame_codec.hpp"

namespace dp::agent {
namespace {

using torchstore::Op;

// A fold's name: the operation and its keys, each length-prefixed (keys are bytes).
void append_key(std::string& name, std::string_view key) {
  name += std::to_string(key.size());
  name += ':';
  name += key;
}

std::string fold_name(const torchstore::Request& r) {
  std::string n(1, static_cast<char>('a' + static_cast<int>(r.op)));
  append_key(n, r.key);
  for (const auto& k : r.keys) append_key(n, k);
  return n;
}

int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

template <class Field>
void copy_keys(const std::vector<std::string>& keys, Field* field) {
  for (const auto& k : keys) field->Add(std::string(k));
}

// The daemon's request for a client's (SPACE_TORCH set at send); values
// move: copies of 8 MiB cost. Local operations have none.
std::optional<proto::Request> upstream_request(torchstore::Request& r) {
  proto::Request up;
  switch (r.op) {
    case Op::validate:
    case Op::ping:
    case Op::cancel_wait:
    case Op::watch_key: return std::nullopt;
    case Op::set:
      up.mutable_set()->set_key(r.key);
      up.mutable_set()->set_value(std::move(r.value));
      break;
    case Op::compare_set: {
      auto* m = up.mutable_compare_and_set();
      m->set_key(r.key);
      m->set_expected(std::move(r.expected));
      m->set_desired(std::move(r.value));
      break;
    }
    case Op::get: up.mutable_get()->set_key(r.key); break;
    case Op::add: up.mutable_add()->set_key(r.key); break;  // the fold's sum is set at send
    case Op::check: copy_keys(r.keys, up.mutable_check()->mutable_keys()); break;
    case Op::wait:
      copy_keys(r.keys, up.mutable_wait()->mutable_keys());
      up.mutable_wait()->set_value(r.keys.size() == 1);  // the GET that follows
      break;
    case Op::get_num_keys: up.mutable_num_keys(); break;
    case Op::delete_key: up.mutable_erase()->set_key(r.key); break;
    case Op::append:
      up.mutable_append()->set_key(r.key);
      up.mutable_append()->set_value(std::move(r.value));
      break;
    case Op::multi_get: copy_keys(r.keys, up.mutable_multi_get()->mutable_keys()); break;
    case Op::multi_set:
      copy_keys(r.keys, up.mutable_multi_set()->mutable_keys());
      for (auto& v : r.values) up.mutable_multi_set()->add_values(std::move(v));
      break;
    case Op::queue_push:
      up.mutable_queue_push()->set_key(r.key);
      up.mutable_queue_push()->set_value(std::move(r.value));
      break;
    case Op::queue_pop: up.mutable_queue_pop()->set_key(r.key); break;
    case Op::queue_len: up.mutable_queue_len()->set_key(r.key); break;
  }
  return up;
}

// A request as its refusal names it: the operation, its key (or how many)
// and, when it carries values, its size.
std::string described(const torchstore::Request& r) {
  std::string d = torchstore::op_name(r.op);
  size_t bytes = r.key.size() + r.value.size() + r.expected.size();
  for (const auto& k : r.keys) bytes += k.size();
  for (const auto& v : r.values) bytes += v.size();
  if (r.keys.empty()) d += " of key " + shown_key(r.key);
  else d += " of " + std::to_string(r.keys.size()) + (r.keys.size() == 1 ? " key" : " keys");
  if (!r.value.empty() || !r.values.empty()) d += " (" + std::to_string(bytes) + " bytes)";
  return d;
}

// Why a client is closed when the daemon refused what it asked.
std::string refused(const std::string& what, const proto::Response& resp) {
  return what + " refused by the step's store: " + rdv::error_from(resp).message +
         "; closing the connection";
}

}  // namespace

StoreFront::StoreFront(AgentCore& link, StoreOutbox& out, torchstore::Limits limits,
                       size_t upstream_frame_bytes)
    : link_(link), out_(out), limits_(limits), upstream_frame_bytes_(upstream_frame_bytes) {}

void StoreFront::on_connect(ConnId conn) {
  // Slots count from 1: 0 names every rider of a client (drop_rider).
  conns_.emplace(conn, Client{torchstore::RequestParser(limits_), {}, 1, {}, 0, 0, {}});
  ++counters_.connections;
}

void StoreFront::on_bytes(ConnId conn, std::string_view bytes) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  if (auto fed = it->second.parser.feed(bytes); !fed) return close(conn, fed.error().message);
  while (true) {
    it = conns_.find(conn);  // a request may have closed it
    if (it == conns_.end()) return;
    auto next = it->second.parser.next();
    if (!next) return close(conn, next.error().message);
    if (!*next) return;
    ++counters_.requests;
    handle(conn, it->second, std::move(**next));
  }
}

void StoreFront::handle(ConnId conn, Client& c, torchstore::Request&& r) {
  ++c.received;
  const auto waited = std::move(c.waited);
  c.waited.reset();
  if (waited && r.op == Op::get && r.key == waited->first) {
    ++counters_.gets_with_wait;
    return fill(conn, take_slot(c), torchstore::encode_value(waited->second));
  }
  switch (torchstore::op_info(r.op).route) {
    case torchstore::Route::local: return local(conn, c, r);
    case torchstore::Route::write: return write(conn, c, r);
    case torchstore::Route::read: return read(conn, c, r);
  }
}

void StoreFront::local(ConnId conn, Client& c, const torchstore::Request& r) {
  switch (r.op) {
    case Op::validate:
      if (r.number != torchstore::kValidationMagic)
        close(conn, "VALIDATE with a wrong magic (PyTorch's server closes too)");
      return;
    case Op::ping: return fill(conn, take_slot(c), torchstore::encode_ping(r.number));
    case Op::cancel_wait: return cancel_wait(conn, c);
    case Op::watch_key:
      // 1.13's C++ watchKey (its Python API has none): the daemon has no
      // change notices to carry its events, so it is refused, not faked.
      return close(conn, std::string(torchstore::op_name(r.op)) +
                             " is not served by the step's store (no PyTorch code path "
                             "sends it; use --dp-store=rank0 for a program that does)");
    case Op::set:
    case Op::compare_set:
    case Op::get:
    case Op::add:
    case Op::check:
    case Op::wait:
    case Op::get_num_keys:
    case Op::delete_key:
    case Op::append:
    case Op::multi_get:
    case Op::multi_set:
    case Op::queue_push:
    case Op::queue_pop:
    case Op::queue_len: return;  // through the daemon (kOps' routes)
  }
}

void StoreFront::write(ConnId conn, Client& c, torchstore::Request& r) {
  std::string what = described(r);
  auto up = upstream_request(r);
  if (!up || !fits_upstream(conn, *up, what)) return;
  const bool answers = torchstore::op_info(r.op).answer != torchstore::Answer::none;
  const Rider rider{conn, answers ? take_slot(c) : 0, r.op, 0};
  send_due();  // the reads that came first leave first
  send(std::move(*up), r.op, Sent{{}, rider, answers, std::move(what)});
}

// PyTorch's caps (the parser's) always fit the daemon's frame with its
// defaults; a daemon run with smaller limits refuses here, for this client.
bool StoreFront::fits_upstream(ConnId conn, const proto::Request& up, const std::string& what) {
  const size_t frame = up.ByteSizeLong() + rdv::kRequestEnvelopeBytes;
  if (frame <= upstream_frame_bytes_) return true;
  close(conn, what + " is over the limit of the step's store: a request of " +
                  std::to_string(frame) + " bytes, at most " +
                  std::to_string(upstream_frame_bytes_) + "; closing the connection");
  return false;
}

void StoreFront::read(ConnId conn, Client& c, torchstore::Request& r) {
  const uint64_t slot = take_slot(c, r.op == Op::wait);
  if (r.op == Op::wait) {
    c.wait_slot = slot;
    c.wait_received = c.received;
  }
  ride(r, Rider{conn, slot, r.op, r.op == Op::add ? r.delta : 0, torchstore::announces_worker(r)});
}

uint64_t StoreFront::take_slot(Client& c, bool wait) {
  c.slots.push_back(Slot{c.next_seq, wait, std::nullopt});
  return c.next_seq++;
}

// A rider joins the next request of its fold: at send_due when none is in
// flight, else once the answer of the one in flight is in.
void StoreFront::ride(torchstore::Request& r, Rider rider) {
  const std::string name = fold_name(r);
  auto [it, fresh] = folds_.try_emplace(name);
  Fold& f = it->second;
  if (fresh) {  // the riders after it share its request
    f.op = r.op;
    f.what = described(r);
    f.request = std::move(*upstream_request(r));
    if (!fits_upstream(rider.conn, f.request, f.what)) {
      folds_.erase(name);  // its one rider's client is closed
      return;
    }
  }
  f.next.push_back(rider);
  if (f.inflight != 0 || f.due) return;
  f.due = true;
  due_.push_back(name);
  if (due_.size() == 1) out_.send_soon();
}

void StoreFront::send_due() {
  std::vector<std::string> due;
  due.swap(due_);
  for (const auto& name : due) {
    auto it = folds_.find(name);
    if (it == folds_.end() || !it->second.due) continue;
    Fold& f = it->second;
    f.due = false;
    if (f.inflight != 0) continue;
    if (f.next.empty()) {
      folds_.erase(it);
    } else {
      launch(name, f);
    }
  }
}

void StoreFront::launch(const std::string& name, Fold& f) {
  f.riding = std::move(f.next);
  f.next.clear();
  proto::Request up = f.request;
  if (up.has_add()) {
    int64_t sum = 0;
    uint32_t workers = 0;
    for (const auto& r : f.riding) {
      sum = wrapping_add(sum, r.delta);
      workers += r.announces ? 1 : 0;
    }
    up.mutable_add()->set_delta(sum);
    up.mutable_add()->set_workers(workers);
  }
  f.inflight = send(std::move(up), f.op, Sent{name, {}, true, {}});
}

uint64_t StoreFront::send(proto::Request req, Op op, Sent sent) {
  req.set_space(proto::SPACE_TORCH);
  ++counters_.upstream;
  const uint64_t id = link_.send_for(*this, std::move(req), torchstore::op_info(op).resend);
  sent_.emplace(id, std::move(sent));
  return id;
}

void StoreFront::on_upstream(uint64_t id, const proto::Response& r) {
  auto it = sent_.find(id);
  if (it == sent_.end()) return;
  Sent s = std::move(it->second);
  sent_.erase(it);
  if (!s.fold.empty()) return answer_fold(s.fold, r);
  if (s.answers) return answer(s.single, r, s.what);
  if (r.code() != proto::OK) close(s.single.conn, refused(s.what, r));
}

void StoreFront::answer_fold(const std::string& name, const proto::Response& r) {
  auto it = folds_.find(name);
  if (it == folds_.end()) return;
  Fold& f = it->second;
  std::vector<Rider> riders = std::move(f.riding);
  f.riding.clear();
  f.inflight = 0;
  const std::string what = f.what;  // answers may close clients and so change folds_
  std::shared_ptr<const std::pair<std::string, std::string>> waited;
  if (f.request.has_wait() && f.request.wait().value() && r.code() == proto::OK &&
      r.values_size() == 1)  // a daemon before Wait.value sends none
    waited = std::make_shared<const std::pair<std::string, std::string>>(f.request.wait().keys(0),
                                                                         r.values(0));
  if (f.request.has_add()) {
    answer_adds(riders, r, what);
  } else {
    for (const auto& rider : riders) answer(rider, r, what, waited);
  }
  // Answers may have closed clients, whose leaving already moved the fold on.
  it = folds_.find(name);
  if (it == folds_.end() || it->second.inflight != 0) return;
  if (it->second.next.empty()) {
    folds_.erase(it);
  } else {
    launch(name, it->second);
  }
}

// The daemon applied the riders' sum at once; in arrival order, each rider's
// answer is the value after its own delta: the sum taken apart again.
void StoreFront::answer_adds(const std::vector<Rider>& riders, const proto::Response& r,
                             const std::string& what) {
  if (r.code() != proto::OK) {
    for (const auto& rider : riders) answer(rider, r, what);
    return;
  }
  int64_t total = 0;
  for (const auto& rider : riders) total = wrapping_add(total, rider.delta);
  int64_t running = wrapping_add(r.number(), -total);
  for (const auto& rider : riders) {
    running = wrapping_add(running, rider.delta);
    fill(rider.conn, rider.slot, torchstore::encode_int64(running));
  }
}

void StoreFront::answer(const Rider& rider, const proto::Response& r, const std::string& what,
                        const std::shared_ptr<const std::pair<std::string, std::string>>& waited) {
  auto c = conns_.find(rider.conn);
  if (c == conns_.end()) return;
  if (rider.op == Op::wait && c->second.wait_slot == rider.slot) {
    c->second.wait_slot.reset();
    // Only while this WAIT is its latest request (not a 1.13 client's
    // timed-out one, answered after it asked on).
    if (c->second.wait_received == c->second.received) c->second.waited = waited;
  }
  if (r.code() != proto::OK) return close(rider.conn, refused(what, r));
  std::string bytes;
  switch (torchstore::op_info(rider.op).answer) {
    case torchstore::Answer::value: bytes = torchstore::encode_value(r.value()); break;
    case torchstore::Answer::values:
      bytes = torchstore::encode_values({r.values().begin(), r.values().end()});
      break;
    case torchstore::Answer::int64: bytes = torchstore::encode_int64(r.number()); break;
    case torchstore::Answer::check:
      bytes = torchstore::encode_check(r.flag() ? torchstore::CheckAnswer::ready
                                                : torchstore::CheckAnswer::not_ready);
      break;
    case torchstore::Answer::wait:
      bytes = torchstore::encode_wait(torchstore::WaitAnswer::stop_waiting);
      break;
    case torchstore::Answer::queue_pop:
      bytes = torchstore::encode_queue_pop(
          r.number(), r.number() > 0 ? std::optional<std::string>(r.value()) : std::nullopt);
      break;
    case torchstore::Answer::none:
    case torchstore::Answer::ping:
    case torchstore::Answer::watch: return;  // no daemon answer of theirs reaches a client
  }
  fill(rider.conn, rider.slot, std::move(bytes));
}

// Replies leave in request order: a slot filled early waits for those before
// it, but for a WAIT not yet answered, which PyTorch's server answers only
// when its keys are set, whatever the client asked after it.
void StoreFront::fill(ConnId conn, uint64_t slot, std::string bytes) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  auto& slots = it->second.slots;
  for (auto& s : slots) {
    if (s.seq == slot) s.bytes = std::move(bytes);
  }
  std::string ready;
  size_t kept = 0;
  bool held = false;  // an unanswered reply other than a WAIT's holds the rest back
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].bytes && !held) {
      if (ready.empty()) ready = std::move(*slots[i].bytes);  // an 8 MiB value: no copy
      else ready += *slots[i].bytes;
      continue;
    }
    held = held || (!slots[i].bytes && !slots[i].wait);
    if (kept != i) slots[kept] = std::move(slots[i]);
    ++kept;
  }
  slots.resize(kept);
  if (!ready.empty()) out_.to_client(conn, ready);  // last: sending may close the client
}

// PyTorch 2.x's client gave up waiting: its WAIT is dropped (here, and
// upstream when no one else rides on it) and WAIT_CANCELED answers.
void StoreFront::cancel_wait(ConnId conn, Client& c) {
  if (c.wait_slot) {
    const uint64_t slot = *c.wait_slot;
    c.wait_slot.reset();
    drop_rider(conn, slot);
    auto& slots = c.slots;
    slots.erase(
        std::remove_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.seq == slot; }),
        slots.end());
  }
  fill(conn, take_slot(c), torchstore::encode_wait(torchstore::WaitAnswer::wait_canceled));
}

// Takes the rider (slot 0: every rider of conn) out of the folds. A fold's
// request in flight with no rider left is cancelled when it is a WAIT (the
// daemon would keep it until its keys exist); adds keep their gone riders,
// whose deltas the daemon applies all the same.
void StoreFront::drop_rider(ConnId conn, uint64_t slot) {
  const auto gone = [&](const Rider& r) { return r.conn == conn && (slot == 0 || r.slot == slot); };
  for (auto it = folds_.begin(); it != folds_.end();) {
    Fold& f = it->second;
    f.next.erase(std::remove_if(f.next.begin(), f.next.end(), gone), f.next.end());
    if (!f.request.has_add())
      f.riding.erase(std::remove_if(f.riding.begin(), f.riding.end(), gone), f.riding.end());
    if (f.inflight != 0 && f.riding.empty() && f.request.has_wait()) {
      link_.cancel_for(f.inflight);
      sent_.erase(f.inflight);
      f.inflight = 0;
    }
    if (f.inflight == 0 && !f.next.empty()) {
      if (!f.due) launch(it->first, f);
    } else if (f.inflight == 0) {
      it = folds_.erase(it);
      continue;
    }
    ++it;
  }
}

void StoreFront::on_disconnect(ConnId conn) {
  if (conns_.erase(conn) == 0) return;
  drop_rider(conn, 0);
}

void StoreFront::close(ConnId conn, const std::string& why) {
  if (!conns_.count(conn)) return;
  ++counters_.closed;
  on_disconnect(conn);
  out_.close_client(conn, why);
}

}  // namespace dp::agent
