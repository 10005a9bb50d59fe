// The request parser on input PyTorch's clients never send: each case names
// what it is, and each ends in one error naming the opcode and field (the
// caller closes), or waits for more bytes, never more than the limits hold.
#include "dp/torchstore/parser.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace dp::torchstore {
namespace {

const std::string kHello = std::string(1, '\0') + "\xce\xf7\x85\x3c";  // VALIDATE + magic

std::string u64(uint64_t n) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);  // host order, as PyTorch sends it
  return out;
}

std::string blob(const std::string& s) { return u64(s.size()) + s; }

// Everything the parser makes of the bytes fed at once: the requests, then
// the error or nullopt (waiting for more).
struct Parsed {
  std::vector<Request> requests;
  std::optional<Error> error;
};

Parsed run(RequestParser& p, const std::string& bytes) {
  Parsed out;
  if (auto fed = p.feed(bytes); !fed) {
    out.error = fed.error();
    return out;
  }
  for (;;) {
    auto r = p.next();
    if (!r) out.error = r.error();
    if (!r || !*r) return out;
    out.requests.push_back(**r);
  }
}

Parsed run(const std::string& bytes, Limits limits = {}) {
  RequestParser p(limits);
  return run(p, bytes);
}

void expect_error(const Parsed& r, Errc code, std::initializer_list<const char*> words) {
  ASSERT_TRUE(r.error) << "no error";
  EXPECT_EQ(r.error->code, code) << r.error->message;
  for (const char* w : words)
    EXPECT_NE(r.error->message.find(w), std::string::npos) << w << " not in: " << r.error->message;
}

TEST(TorchStoreParser, LegacySetGetAddAreParsed) {
  const auto r = run(std::string(1, '\0') + blob("/k") + blob("v") + "\x02" + blob("/k") + "\x03" +
                     blob("/n") + u64(static_cast<uint64_t>(-3)));
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[0].op, Op::set);
  EXPECT_EQ(r.requests[0].key, "/k");
  EXPECT_EQ(r.requests[0].value, "v");
  EXPECT_EQ(r.requests[1].op, Op::get);
  EXPECT_EQ(r.requests[2].op, Op::add);
  EXPECT_EQ(r.requests[2].delta, -3);
}

TEST(TorchStoreParser, V2ValidatePingAndMultiSetAreParsed) {
  const auto r = run(kHello + "\x0d" + std::string("\x2a\0\0\0", 4) + "\x0b" + u64(2) + blob("a") +
                     blob("1") + blob("b") + blob(""));
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.requests[0].op, Op::validate);
  EXPECT_EQ(r.requests[1].op, Op::ping);
  EXPECT_EQ(r.requests[1].number, 42u);
  EXPECT_EQ(r.requests[2].keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.requests[2].values, (std::vector<std::string>{"1", ""}));
}

TEST(TorchStoreParser, TruncatedRequestWaitsAndHoldsOnlyItsBytes) {
  RequestParser p;
  const std::string set = std::string(1, '\0') + blob("/key") + blob("value");
  auto r = run(p, set.substr(0, set.size() - 1));
  EXPECT_FALSE(r.error);
  EXPECT_TRUE(r.requests.empty());
  r = run(p, set.substr(set.size() - 1));
  EXPECT_FALSE(r.error);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(TorchStoreParser, HugeKeyLengthIsRefusedBeforeItsBytesArrive) {
  expect_error(run(std::string(1, '\3') + u64(1ull << 40)), Errc::limit,
               {"ADD (0x03)", "key of 1099511627776 bytes", "limit of 8192"});
}

TEST(TorchStoreParser, HugeValueLengthIsRefused) {
  expect_error(run(kHello + "\x01" + blob("/k") + u64(~0ull)), Errc::limit,
               {"SET (0x01)", "value of 18446744073709551615 bytes"});
}

// What PyTorch's servers take by default is taken (dp/store_limits.hpp):
// an 8 MiB value, an 8 KiB key, a multi_set of 3 x 3 MiB (9 MiB in all).
TEST(TorchStoreParser, TheStepStoresLimitsTakeWhatPyTorchsServersTake) {
  const std::string key(8 * 1024, 'k'), big(8u << 20, 'v'), third(3u << 20, 't');
  const auto r = run(std::string(1, '\0') + blob(key) + blob(big));
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].key.size(), key.size());
  EXPECT_EQ(r.requests[0].value.size(), big.size());
  const auto m = run(kHello + "\x0b" + u64(3) + blob("/m0") + blob(third) + blob("/m1") +
                     blob(third) + blob("/m2") + blob(third));
  ASSERT_FALSE(m.error) << m.error->message;
  ASSERT_EQ(m.requests.size(), 2u);
  EXPECT_EQ(m.requests[1].values.size(), 3u);
}

// The refusal names the key whose value is over the limit, its size and the
// limit: the agent's log line and the step's end say which request it was.
TEST(TorchStoreParser, AValueOverTheLimitIsRefusedNamingItsKey) {
  expect_error(run(std::string(1, '\0') + blob("/huge") + u64(64u << 20)), Errc::limit,
               {"SET (0x00)", "value of 67108864 bytes for key '/huge'", "limit of 8388608"});
  Limits small;
  small.request_bytes = 64;
  expect_error(run(kHello + "\x0b" + u64(2) + blob("/a") + blob("1") + blob("/b") +
                       blob(std::string(40, 'x')),
                   small),
               Errc::limit, {"MULTI_SET (0x0b)", "over the limit of 64 bytes", "for key '/b'"});
}

TEST(TorchStoreParser, HugeExpectedValueOfCompareSetIsRefused) {
  expect_error(run(std::string(1, '\1') + blob("/k") + u64(1ull << 33)), Errc::limit,
               {"COMPARE_SET (0x01)", "expected value"});
}

TEST(TorchStoreParser, KeyCountOverTheLimitIsRefused) {
  expect_error(run(std::string(1, '\5') + u64(1u << 20)), Errc::limit,
               {"WAIT (0x05)", "key count 1048576", "limit of 131072"});
}

TEST(TorchStoreParser, NegativeMultiSetCountIsRefused) {
  expect_error(run(kHello + "\x0b" + u64(static_cast<uint64_t>(-1))), Errc::limit,
               {"MULTI_SET (0x0b)", "key count"});
}

TEST(TorchStoreParser, KeyCountThatCannotFitTheRequestIsRefused) {
  Limits small;
  small.request_bytes = 1000;
  expect_error(run(std::string(1, '\4') + u64(200), small), Errc::limit,
               {"CHECK (0x04)", "200 keys cannot fit"});
}

TEST(TorchStoreParser, RequestOverItsLimitIsRefusedAtTheFieldThatCrossesIt) {
  Limits small;
  small.request_bytes = 64;
  const std::string keys = blob(std::string(20, 'a')) + blob(std::string(20, 'b'));
  expect_error(run(std::string(1, '\5') + u64(2) + keys, small), Errc::limit,
               {"WAIT (0x05)", "over the limit of 64 bytes at its key"});
}

TEST(TorchStoreParser, InputHeldOverTheLimitIsRefused) {
  Limits small;
  small.buffered_bytes = 16;
  expect_error(run(std::string(1, '\0') + blob(std::string(20, 'k')), small), Errc::limit,
               {"more than 16 bytes of input held"});
}

TEST(TorchStoreParser, UnknownLegacyOpcodeIsNamed) {
  // 1.13 has no APPEND: 0x09 is nothing there.
  expect_error(run(std::string(1, '\x09')), Errc::protocol,
               {"PyTorch 1.13/2.0", "unknown opcode 0x09", "closing"});
}

TEST(TorchStoreParser, UnknownV2OpcodeIsNamed) {
  expect_error(run(kHello + "\xee"), Errc::protocol, {"PyTorch 2.2+", "unknown opcode 0xee"});
}

TEST(TorchStoreParser, NewerOpcodeIsNamedNotServed) {
  expect_error(run(kHello + "\x11"), Errc::protocol, {"LIST_KEYS (0x11)", "not served"});
}

TEST(TorchStoreParser, WrongMagicIsRefusedAtItsFifthByte) {
  expect_error(run(std::string(1, '\0') + "\xde\xad\xbe\xef"), Errc::protocol,
               {"no VALIDATE magic"});
}

TEST(TorchStoreParser, LegacySetWithAShortKeyIsNoWrongMagic) {
  const auto r = run(std::string(1, '\0') + blob("abc") + blob("x"));
  ASSERT_FALSE(r.error);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].key, "abc");
}

TEST(TorchStoreParser, ValidateWithAWrongNumberLaterIsRefused) {
  expect_error(run(kHello + std::string(1, '\0') + "\xce\xf7\x85\x3c"), Errc::protocol,
               {"VALIDATE after the connection's first request"});
}

TEST(TorchStoreParser, PerRequestMagicOfA21DevelopmentBuildIsNamed) {
  expect_error(run("\xce\xf7\x85\x3c\x06"), Errc::protocol, {"development build"});
}

TEST(TorchStoreParser, ErrorIsFinal) {
  RequestParser p;
  auto r = run(p, std::string(1, '\x09'));
  ASSERT_TRUE(r.error);
  EXPECT_FALSE(p.feed(std::string(1, '\x06')));
  auto again = p.next();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message, r.error->message);
}

TEST(TorchStoreParser, EmptyKeysValuesAndKeyListsAreValid) {
  const auto r = run(std::string(1, '\0') + blob("") + blob("") + "\x05" + u64(0));
  ASSERT_FALSE(r.error);
  ASSERT_EQ(r.requests.size(), 2u);
  EXPECT_TRUE(r.requests[1].keys.empty());
}

}  // namespace
}  // namespace dp::torchstore
