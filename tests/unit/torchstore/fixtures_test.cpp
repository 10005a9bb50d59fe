// The recordings of real PyTorch clients and PyTorch's own server
// (tests/fixtures/torch-store/README.md) through the codec: every client byte
// stream decodes the same however it is split, re-encodes to the very bytes
// the client sent, and the reference store answers each connection with the
// very bytes PyTorch's server sent it.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "dp/torchstore/parser.hpp"
#include "dp/torchstore/store_model.hpp"
#include "fixture.hpp"

namespace dp::torchstore {
namespace {

using testing::Event;
using testing::hex;
using testing::Recording;

struct ParsedStream {
  std::vector<Request> requests;
  std::optional<std::string> error;
  std::optional<Dialect> dialect;
  bool mid_request = false;  // at the end
};

// Feeds the stream cut at the given offsets, draining after each piece.
ParsedStream parse(const std::string& stream, const std::vector<size_t>& cuts) {
  RequestParser p;
  ParsedStream out;
  size_t from = 0;
  auto pieces = cuts;
  pieces.push_back(stream.size());
  for (size_t to : pieces) {
    if (auto fed = p.feed(std::string_view(stream).substr(from, to - from)); !fed) {
      out.error = fed.error().message;
      break;
    }
    from = to;
    for (;;) {
      auto r = p.next();
      if (!r) out.error = r.error().message;
      if (!r || !*r) break;
      out.requests.push_back(std::move(**r));
    }
    if (out.error) break;
  }
  out.dialect = p.dialect();
  out.mid_request = p.mid_request();
  return out;
}

void expect_same(const ParsedStream& a, const ParsedStream& b) {
  EXPECT_EQ(a.requests, b.requests);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.dialect, b.dialect);
}

// The one connection where this codec and the recorded server part: PyTorch
// 2.6's server closes a connection whose first byte is 07 (no VALIDATE); a
// server of both dialects reads it as a 1.13 client's WATCH_KEY, waiting for
// its key.
bool reads_as_legacy_watch(const Recording& r, uint64_t conn) {
  return r.name == "torch-2.6-errors.txt" && conn == 5;
}

TEST(TorchStoreFixtures, EveryRecordingIsHere) {
  std::set<std::string> names;
  for (const auto& r : testing::load_recordings()) names.insert(r.name);
  for (const char* version : {"1.13", "2.6"})
    for (const char* scenario : {"ops", "wake", "errors", "init"})
      EXPECT_TRUE(names.count(std::string("torch-") + version + "-" + scenario + ".txt"))
          << version << " " << scenario;
}

TEST(TorchStoreFixtures, ClientBytesDecodeTheSameAtEverySplit) {
  for (const auto& rec : testing::load_recordings()) {
    for (const auto& [conn, stream] : rec.client_streams()) {
      SCOPED_TRACE(rec.name + " connection " + std::to_string(conn));
      const ParsedStream whole = parse(stream, {});
      if (reads_as_legacy_watch(rec, conn)) {
        EXPECT_EQ(whole.dialect, Dialect::legacy);
        EXPECT_TRUE(whole.mid_request);
      } else if (!rec.closed_by_server(conn)) {
        const bool v2 = rec.name.rfind("torch-2.", 0) == 0;
        EXPECT_EQ(whole.dialect, v2 ? Dialect::v2 : Dialect::legacy);
        EXPECT_FALSE(whole.error) << *whole.error;
        EXPECT_FALSE(whole.mid_request);
      }
      for (size_t cut = 0; cut <= stream.size(); ++cut) expect_same(whole, parse(stream, {cut}));
      std::vector<size_t> every_byte;
      for (size_t cut = 1; cut < stream.size(); ++cut) every_byte.push_back(cut);
      expect_same(whole, parse(stream, every_byte));
    }
  }
}

TEST(TorchStoreFixtures, RequestsEncodeBackToTheRecordedBytes) {
  for (const auto& rec : testing::load_recordings()) {
    for (const auto& [conn, stream] : rec.client_streams()) {
      const ParsedStream whole = parse(stream, {});
      if (whole.error || whole.mid_request) continue;
      SCOPED_TRACE(rec.name + " connection " + std::to_string(conn));
      std::string again;
      for (const auto& r : whole.requests) {
        auto bytes = encode_request(*whole.dialect, r);
        ASSERT_TRUE(bytes) << bytes.error().message;
        again += *bytes;
      }
      EXPECT_EQ(hex(again), hex(stream));
    }
  }
}

// Replays the client bytes in the order the relay saw them through one
// reference store; collects what it answers each connection.
struct Replay {
  StoreModel model{ServerKind::classic};
  std::map<uint64_t, RequestParser> parsers;
  std::map<uint64_t, std::string> answered;
  std::set<uint64_t> closed;  // by us: a parser error or the store's close

  void client_sent(uint64_t conn, const std::string& bytes) {
    auto& p = parsers[conn];
    if (closed.count(conn) || !p.feed(bytes)) return close(conn);
    for (;;) {
      auto r = p.next();
      if (!r) return close(conn);
      if (!*r) return;
      const Outcome out = model.apply(conn, **r);
      for (const auto& d : out.replies) answered[d.conn] += d.bytes;
      if (out.close) return close(conn);
    }
  }
  void close(uint64_t conn) {
    closed.insert(conn);
    model.disconnect(conn);
  }
};

TEST(TorchStoreFixtures, ReferenceStoreAnswersAsTheRealServerDid) {
  for (const auto& rec : testing::load_recordings()) {
    SCOPED_TRACE(rec.name);
    Replay replay;
    for (const auto& e : rec.events) {
      if (e.kind == Event::Kind::to_server) replay.client_sent(e.conn, e.bytes);
      if (e.kind == Event::Kind::close_client) replay.model.disconnect(e.conn);
      if (e.kind == Event::Kind::close_server && !reads_as_legacy_watch(rec, e.conn)) {
        EXPECT_TRUE(replay.closed.count(e.conn)) << "the real server closed connection " << e.conn;
      }
    }
    for (uint64_t conn : replay.closed)
      EXPECT_TRUE(rec.closed_by_server(conn)) << "we closed connection " << conn;
    auto recorded = rec.server_streams();
    for (const auto& [conn, bytes] : replay.answered)
      EXPECT_EQ(hex(bytes), hex(recorded[conn])) << "connection " << conn;
    for (const auto& [conn, bytes] : recorded)
      EXPECT_EQ(hex(replay.answered[conn]), hex(bytes)) << "connection " << conn;
  }
}

Recording recording(const std::string& name) {
  static const auto all = testing::load_recordings();
  for (const auto& r : all)
    if (r.name == name) return r;
  throw std::runtime_error("no recording " + name);
}

TEST(TorchStoreFixtures, TwoSixOpensWithValidateThenPingsItsPid) {
  const auto rec = recording("torch-2.6-init.txt");
  const std::string first = rec.client_streams().at(0);
  EXPECT_EQ(hex(first.substr(0, 6)), "00cef7853c0d");  // VALIDATE + magic, PING
  EXPECT_EQ(hex(rec.server_streams().at(0).substr(0, 4)), hex(first.substr(6, 4)));  // echoed
  // One connection per client: no callback connection from 2.x.
  EXPECT_EQ(rec.client_streams().size(), 2u);
}

TEST(TorchStoreFixtures, OneThirteenOpensAnIdleSecondConnectionPerClient) {
  const auto rec = recording("torch-1.13-init.txt");
  std::map<uint64_t, bool> opened;
  for (const auto& e : rec.events)
    if (e.kind == Event::Kind::open) opened[e.conn] = true;
  EXPECT_EQ(opened.size(), 4u);                // two ranks, two connections each
  EXPECT_EQ(rec.client_streams().size(), 2u);  // the callback connections never send
  // Every client built with a world size adds 1 to the raw key "init/" first.
  const std::string first = rec.client_streams().at(0);
  EXPECT_EQ(hex(first.substr(0, 22)), "030500000000000000696e69742f0100000000000000");
}

// The daemon times a restart's rendezvous by TCPStore's worker handshake:
// each rank's store client announces itself once, before its own requests,
// and no program's own ADD (every user key starts with "/") reads as one.
TEST(TorchStoreFixtures, EachRanksClientAnnouncesItselfOnceAndNothingElseDoes) {
  for (const auto& rec : testing::load_recordings()) {
    SCOPED_TRACE(rec.name);
    int announced = 0;
    for (const auto& [conn, stream] : rec.client_streams()) {
      const ParsedStream whole = parse(stream, {});
      int here = 0;
      for (size_t i = 0; i < whole.requests.size(); ++i) {
        const Request& r = whole.requests[i];
        if (r.op == Op::add && !r.key.empty() && r.key.front() == '/') {
          EXPECT_FALSE(announces_worker(r)) << r.key;
        }
        if (!announces_worker(r)) continue;
        ++here;
        for (size_t j = 0; j < i; ++j) {  // only the connection's own handshake before it
          EXPECT_TRUE(whole.requests[j].op == Op::validate || whole.requests[j].op == Op::ping)
              << "connection " << conn << " request " << j;
        }
      }
      EXPECT_LE(here, 1) << "connection " << conn;
      announced += here;
    }
    if (rec.name.find("-init.txt") != std::string::npos) {
      EXPECT_EQ(announced, 2);  // two ranks
    }
  }
}

TEST(TorchStoreRequest, OnlyTheRawInitAddOfOneAnnouncesAWorker) {
  Request r;
  r.op = Op::add;
  r.key = "init/";
  r.delta = 1;
  EXPECT_TRUE(announces_worker(r));
  r.delta = 0;  // a barrier's poll shape
  EXPECT_FALSE(announces_worker(r));
  r.delta = 1;
  r.key = "/init/";  // a program's own key
  EXPECT_FALSE(announces_worker(r));
  r.key = "/default_pg/0//cuda//init/";
  EXPECT_FALSE(announces_worker(r));
  r.key = "init/";
  r.op = Op::set;
  EXPECT_FALSE(announces_worker(r));
}

}  // namespace
}  // namespace dp::torchstore
