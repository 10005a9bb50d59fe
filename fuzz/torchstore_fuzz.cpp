// libFuzzer target: the PyTorch store request parser (torchstore/) as a
// server reads it. The input's first byte picks the reference store's kind
// and how pieces are cut; the rest is two connections' bytes, interleaved in
// pieces of 1 to 16 bytes, answered by one store. Never a crash; never more
// held than the limits; each stream parses the same whole as in pieces; every
// request encodes back to bytes that parse to the same request.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/torchstore/parser.hpp"
#include "dp/torchstore/store_model.hpp"
#include "torchstore_limits.hpp"

namespace {

using dp::torchstore::Dialect;
using dp::torchstore::Request;
using dp::torchstore::RequestParser;

using dp::fuzz::small_store_limits;

struct Conn {
  RequestParser parser{small_store_limits()};
  std::string sent;  // every byte fed, to parse again whole
  std::vector<Request> requests;
  std::optional<std::string> error;
};

// Feeds one piece and drains; false once the connection is closed.
bool feed(Conn& c, std::string_view piece) {
  if (c.error) return false;
  c.sent += piece;
  if (auto fed = c.parser.feed(piece); !fed) {
    c.error = fed.error().message;
    return false;
  }
  for (;;) {
    if (c.parser.buffered() > small_store_limits().buffered_bytes) std::abort();
    auto r = c.parser.next();
    if (!r) c.error = r.error().message;
    if (!r || !*r) return !c.error;
    c.requests.push_back(**r);
  }
}

// The same stream fed in pieces of 512 bytes (too few to reach the input
// limit) gives the same requests and error.
void check_whole(const Conn& c) {
  Conn whole;
  for (size_t at = 0; at < c.sent.size() && !whole.error; at += 512)
    feed(whole, std::string_view(c.sent).substr(at, 512));
  if (whole.requests != c.requests || whole.error != c.error) std::abort();
}

// A parsed request encodes to bytes a fresh parser reads back as it.
void check_round_trip(Dialect d, const Request& r) {
  auto bytes = dp::torchstore::encode_request(d, r);
  if (!bytes) std::abort();
  Conn again;
  if (d == Dialect::v2 && r.op != dp::torchstore::Op::validate)
    feed(again, std::string(1, '\0') + "\xce\xf7\x85\x3c");
  feed(again, *bytes);
  if (again.error || again.requests.empty() || again.requests.back() != r) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  dp::torchstore::StoreModel store(mode & 1 ? dp::torchstore::ServerKind::libuv
                                            : dp::torchstore::ServerKind::classic);
  Conn conns[2];
  size_t applied[2] = {0, 0};
  bool closed[2] = {false, false};  // by the store (a parser error ends feeding too)
  uint32_t cut = mode | 1u;
  for (size_t at = 1; at < size;) {
    cut = cut * 1103515245u + 12345u;  // the cuts follow from the first byte
    const size_t n = std::min<size_t>(1 + (cut >> 16) % 16, size - at);
    const int which = (mode & 2) ? static_cast<int>((cut >> 8) & 1) : 0;
    at += n;
    if (closed[which]) continue;
    Conn& c = conns[which];
    const bool open = feed(c, std::string_view(reinterpret_cast<const char*>(data) + at - n, n));
    while (!closed[which] && applied[which] < c.requests.size()) {
      const auto out = store.apply(which, c.requests[applied[which]++]);
      for (const auto& d : out.replies)
        if (d.conn > 1 || d.bytes.empty()) std::abort();
      closed[which] = out.close.has_value();
    }
    closed[which] = closed[which] || !open;
    if (closed[which]) store.disconnect(which);
  }
  for (const Conn& c : conns) {
    check_whole(c);
    for (const auto& r : c.requests) check_round_trip(*c.parser.dialect(), r);
  }
  return 0;
}
