// Writes seed corpora: for rendezvous_fuzz whole valid sessions (hello with
// the proof for the fuzz secret and nonce, then every operation), so the
// fuzzer starts past hello; for client_reply_fuzz (second folder) the daemon's
// side of such a session: challenge, replies, keepalives, an abort.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/text_format.h>

#include "frame_codec.hpp"
#include "hello_proof.hpp"
#include "protocol_version.hpp"

namespace {

const std::string kSecret = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";
const std::string kNonce(dp::rdv::kNonceBytes, 'z');  // rendezvous_fuzz pins every challenge to it

// One "feed" operation of the fuzz script carrying frame bytes to conn.
void feed(std::string& script, int conn, const std::string& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min<size_t>(200, bytes.size() - at);
    script += static_cast<char>(conn & 3);
    script += static_cast<char>(n);
    script.append(bytes, at, n);
    at += n;
  }
}

std::string frame(const dp::proto::Request& r) {
  std::string s;
  dp::rdv::append_frame(r, s);
  return s;
}

dp::proto::Request hello(int rank) {
  dp::proto::Request r;
  r.set_id(1);
  auto* h = r.mutable_hello();
  h->set_protocol_version(dp::rdv::protocol_range().newest);
  const auto role = rank >= 0 ? dp::proto::ROLE_RANK : dp::proto::ROLE_AGENT;
  h->set_rank(rank);
  h->set_world_size(2);
  h->set_host("h");
  h->set_role(role);
  h->set_proof(dp::rdv::hello_proof(kSecret, kNonce, role, rank, 2, "h"));
  return r;
}

// A node agent (ROLE_NODE) speaking for both ranks of the fuzz step.
dp::proto::Request node_hello() {
  dp::proto::Request r;
  r.set_id(1);
  auto* h = r.mutable_hello();
  h->set_protocol_version(dp::rdv::protocol_range().newest);
  h->set_world_size(2);
  h->set_host("n");
  h->set_role(dp::proto::ROLE_NODE);
  const std::vector<int32_t> ranks{0, 1};
  for (int32_t x : ranks) h->add_node_ranks(x);
  h->set_proof(dp::rdv::hello_proof(kSecret, kNonce, dp::proto::ROLE_NODE, 0, 2, "n", ranks));
  return r;
}

// A node session: write-once ID, a folded barrier, per-rank heartbeats and
// goodbyes, then a lost rank with its exit status.
std::string node_seed() {
  std::string s;
  feed(s, 0, frame(node_hello()));
  feed(s, 2, frame(hello(-1)));
  dp::proto::Request r;
  r.set_id(2);
  r.mutable_set()->set_key("id");
  r.mutable_set()->set_value(std::string(128, 'x'));
  r.mutable_set()->set_once(true);
  feed(s, 0, frame(r));
  r.mutable_set()->set_value("y");
  feed(s, 2, frame(r));  // conflict
  r.Clear();
  r.set_id(3);
  r.mutable_barrier()->set_name("b");
  r.mutable_barrier()->add_ranks(1);
  r.mutable_barrier()->add_ranks(0);
  feed(s, 0, frame(r));
  r.Clear();
  auto* rp = r.mutable_heartbeat()->add_ranks();
  rp->set_rank(1);
  rp->mutable_progress()->set_ops_started(3);
  feed(s, 0, frame(r));
  r.Clear();
  r.set_id(4);
  r.mutable_goodbye()->set_rank(0);
  feed(s, 0, frame(r));
  r.Clear();
  r.set_id(5);
  r.mutable_rank_lost()->set_rank(1);
  r.mutable_rank_lost()->set_signal(9);
  r.mutable_rank_lost()->set_detail("local connection dropped");
  feed(s, 0, frame(r));
  return s;
}

std::string reply(uint64_t id, dp::proto::Code code, const std::string& message = {},
                  const std::string& value = {}) {
  dp::proto::Response r;
  r.set_id(id);
  r.set_code(code);
  if (!message.empty()) r.set_message(message);
  if (!value.empty()) r.set_value(value);
  std::string s;
  dp::rdv::append_frame(r, s);
  return s;
}

void write_client_seeds(const std::string& dir) {
  dp::proto::Response c;
  c.set_challenge(kNonce);
  std::string challenge;
  dp::rdv::append_frame(c, challenge);
  std::vector<std::string> seeds;
  // First byte: the reader's limit (odd: 64 KiB); it also sizes the first chunk.
  seeds.push_back("\x01" + challenge + reply(1, dp::proto::OK) + reply(0, dp::proto::OK) +
                  reply(2, dp::proto::OK, {}, std::string(300, 'v')) +
                  reply(3, dp::proto::NOT_FOUND, "key 'x' does not exist"));
  seeds.push_back("\x03" + challenge + reply(1, dp::proto::OK) +
                  reply(0, dp::proto::ABORTED, "rank 1 (host \x1b[31m) died\xff"));
  seeds.push_back("\x02" + reply(0, dp::proto::LIMIT, "too many connections"));
  seeds.push_back(std::string("\x01\x7f\xff\xff\xff", 5));  // a 2 GiB announcement
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir + "/seed-" + std::to_string(i), std::ios::binary) << seeds[i];
  }
  std::printf("%zu client seeds written to %s\n", seeds.size(), dir.c_str());
}

// One request of a seed session: the connections it goes to, and its
// operation in protobuf text format (the id is the session's next one).
struct Op {
  std::vector<int> conns;
  std::string text;
};

// Appends `ops` to `script`, numbering the requests from `id` on.
bool feed_ops(std::string& script, uint64_t& id, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    dp::proto::Request r;
    if (!google::protobuf::TextFormat::ParseFromString(op.text, &r)) {
      std::fprintf(stderr, "make_seeds: not a Request: %s\n", op.text.c_str());
      return false;
    }
    r.set_id(id++);
    const std::string bytes = frame(r);
    for (int conn : op.conns) feed(script, conn, bytes);
  }
  return true;
}

// A fuzz script step that lets `ms` of daemon time pass.
std::string tick(int ms) { return {static_cast<char>(8), static_cast<char>(ms)}; }

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::vector<std::string> seeds;
  uint64_t id = 2;  // 1 is every connection's hello
  std::string s;
  feed(s, 0, frame(hello(0)));
  feed(s, 1, frame(hello(1)));
  feed(s, 2, frame(hello(-1)));
  const std::vector<Op> session = {
      {{1}, "get { key: 'id' blocking: true timeout_ms: 100 }"},
      {{0}, "set { key: 'id' value: '" + std::string(128, 'x') + "' }"},
      {{2}, "add { key: 'n' delta: 5 }"},
      {{2}, "compare_and_set { key: 'n' expected: '5' desired: '6' }"},
      {{2}, "wait { keys: 'a' keys: 'n' timeout_ms: 200 }"},
      {{0, 1}, "barrier { name: 'b' timeout_ms: 300 }"},
      {{2}, "erase { key: 'n' }"},
      {{2}, "exists { key: 'id' }"},
      {{2}, "stats {}"},
  };
  if (!feed_ops(s, id, session)) return 1;
  seeds.push_back(s);

  std::string t = s + tick(40);
  if (!feed_ops(t, id, {{{0}, "barrier { name: 'late' timeout_ms: 100 }"}})) return 1;
  t += tick(10);
  t += static_cast<char>(12 | 1);  // rank 1 disconnects: abort
  if (!feed_ops(t, id, {{{0}, "set { key: 'after' }"}})) return 1;
  seeds.push_back(t);

  std::string g = s;
  if (!feed_ops(g, id, {{{2}, "abort { reason: 'stop' }"}, {{0, 1}, "goodbye {}"}})) return 1;
  seeds.push_back(g);

  seeds.push_back(node_seed());

  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir + "/seed-" + std::to_string(i), std::ios::binary) << seeds[i];
  }
  std::printf("%zu seeds written to %s\n", seeds.size(), dir.c_str());
  if (argc > 2) write_client_seeds(argv[2]);
  return 0;
}
