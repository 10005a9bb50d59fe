// Writes a seed corpus for rendezvous_fuzz: whole valid sessions (hello with
// the fuzz secret, then every operation), so the fuzzer starts past hello.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "frame_codec.hpp"

namespace {

const std::string kSecret = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";

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
  h->set_protocol_version(dp::rdv::kProtocolVersion);
  h->set_secret(kSecret);
  h->set_rank(rank);
  h->set_world_size(2);
  h->set_host("h");
  h->set_role(rank >= 0 ? dp::proto::ROLE_RANK : dp::proto::ROLE_AGENT);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::vector<std::string> seeds;
  std::string s;
  feed(s, 0, frame(hello(0)));
  feed(s, 1, frame(hello(1)));
  feed(s, 2, frame(hello(-1)));
  dp::proto::Request r;
  r.set_id(2);
  r.mutable_get()->set_key("id");
  r.mutable_get()->set_blocking(true);
  r.mutable_get()->set_timeout_ms(100);
  feed(s, 1, frame(r));
  r.Clear();
  r.set_id(3);
  r.mutable_set()->set_key("id");
  r.mutable_set()->set_value(std::string(128, 'x'));
  feed(s, 0, frame(r));
  r.Clear();
  r.set_id(4);
  r.mutable_add()->set_key("n");
  r.mutable_add()->set_delta(5);
  feed(s, 2, frame(r));
  r.Clear();
  r.set_id(5);
  r.mutable_compare_and_set()->set_key("n");
  r.mutable_compare_and_set()->set_expected("5");
  r.mutable_compare_and_set()->set_desired("6");
  feed(s, 2, frame(r));
  r.Clear();
  r.set_id(6);
  r.mutable_wait()->add_keys("a");
  r.mutable_wait()->add_keys("n");
  r.mutable_wait()->set_timeout_ms(200);
  feed(s, 2, frame(r));
  r.Clear();
  r.set_id(7);
  r.mutable_barrier()->set_name("b");
  r.mutable_barrier()->set_timeout_ms(300);
  feed(s, 0, frame(r));
  feed(s, 1, frame(r));
  r.Clear();
  r.set_id(8);
  r.mutable_erase()->set_key("n");
  feed(s, 2, frame(r));
  r.Clear();
  r.set_id(9);
  r.mutable_exists()->set_key("id");
  feed(s, 2, frame(r));
  r.Clear();
  r.set_id(10);
  r.mutable_stats();
  feed(s, 2, frame(r));
  seeds.push_back(s);

  std::string t = s;
  t += static_cast<char>(8);  // tick
  t += static_cast<char>(40);
  r.Clear();
  r.set_id(11);
  r.mutable_barrier()->set_name("late");
  r.mutable_barrier()->set_timeout_ms(100);
  feed(t, 0, frame(r));
  t += static_cast<char>(8);
  t += static_cast<char>(10);
  t += static_cast<char>(12 | 1);  // rank 1 disconnects: abort
  r.Clear();
  r.set_id(12);
  r.mutable_set()->set_key("after");
  feed(t, 0, frame(r));
  seeds.push_back(t);

  std::string g = s;
  r.Clear();
  r.set_id(13);
  r.mutable_abort()->set_reason("stop");
  feed(g, 2, frame(r));
  r.Clear();
  r.set_id(14);
  r.mutable_goodbye();
  feed(g, 0, frame(r));
  feed(g, 1, frame(r));
  seeds.push_back(g);

  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream(dir + "/seed-" + std::to_string(i), std::ios::binary) << seeds[i];
  }
  std::printf("%zu seeds written to %s\n", seeds.size(), dir.c_str());
  return 0;
}
