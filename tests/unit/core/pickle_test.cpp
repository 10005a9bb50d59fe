// The pickle subset of built-in values: pickles Python 3.11 wrote (protocols
// 2 and 5), the opcodes that would run code refused, a truncated dump, a
// container that holds itself, and the bounds.
#include "dp/pickle.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dp::pickle_test {
namespace {

using pickle::Kind;

std::string bytes(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoul(hex.substr(i, 2), nullptr, 16));
  return out;
}

// {'a': [1, -2, None, True, False, 2**40, -2**40, 1.5, 300, 70000], 'b': 'xé',
//  'c': (1,), 't': (1, 2, 3), 'e': (), 'bytes': b'\x00\x01'}, protocol 5.
const char* kProtocol5 =
    "80059568000000000000007d94288c0161945d94284b014afeffffff4e88898a060000000000018a060000000000"
    "ff473ff80000000000004d2c014a70110100658c0162948c0378c3a9948c0163944b0185948c0174944b014b024b"
    "0387948c016594298c056279746573944302000194752e";

TEST(Pickle, ReadsBuiltInValuesOfProtocol5) {
  auto d = pickle::parse(bytes(kProtocol5));
  ASSERT_TRUE(d) << d.error().message;
  const auto& root = d->root();
  ASSERT_EQ(root.kind, Kind::dict);
  const auto* a = d->get(root, "a");
  ASSERT_TRUE(a && a->kind == Kind::list);
  ASSERT_EQ(a->items.size(), 10u);
  EXPECT_EQ(d->at(a->items[0]).integer, 1);
  EXPECT_EQ(d->at(a->items[1]).integer, -2);
  EXPECT_EQ(d->at(a->items[2]).kind, Kind::none);
  EXPECT_EQ(d->at(a->items[3]).kind, Kind::boolean);
  EXPECT_EQ(d->at(a->items[3]).integer, 1);
  EXPECT_EQ(d->at(a->items[4]).integer, 0);
  EXPECT_EQ(d->at(a->items[5]).integer, int64_t{1} << 40);
  EXPECT_EQ(d->at(a->items[6]).integer, -(int64_t{1} << 40));
  EXPECT_EQ(d->at(a->items[7]).real, 1.5);
  EXPECT_EQ(d->at(a->items[8]).integer, 300);
  EXPECT_EQ(d->at(a->items[9]).integer, 70000);
  EXPECT_EQ(d->get(root, "b")->text, "x\xc3\xa9");
  EXPECT_EQ(d->get(root, "t")->items.size(), 3u);
  EXPECT_EQ(d->get(root, "c")->items.size(), 1u);
  EXPECT_TRUE(d->get(root, "e")->items.empty());
  EXPECT_EQ(d->get(root, "bytes")->text, std::string("\x00\x01", 2));
  EXPECT_EQ(d->get(root, "missing"), nullptr);
}

TEST(Pickle, RefusesOpcodesThatNameOrCallAClass) {
  // Protocol 2 writes bytes as _codecs.encode(...): GLOBAL and REDUCE.
  auto d = pickle::parse(bytes(
      "80027d7100580500000062797465737101635f636f646563730a656e636f64650a710258020000000001710358"
      "060000006c6174696e317104867105527106732e"));
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("outside the subset"), std::string::npos) << d.error().message;
  EXPECT_NE(d.error().message.find("offset"), std::string::npos);
}

TEST(Pickle, ReadsSets) {
  // {"s": {1, 2}, "f": frozenset([3])}, protocol 4: EMPTY_SET, ADDITEMS, FROZENSET.
  auto d = pickle::parse(
      bytes("8004951a000000000000007d94288c0173948f94284b014b02908c016694284b039194752e"));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->get(d->root(), "s")->kind, Kind::set);
  EXPECT_EQ(d->get(d->root(), "s")->items.size(), 2u);
  EXPECT_EQ(d->get(d->root(), "f")->items.size(), 1u);
}

TEST(Pickle, TakesAClassAsAnInertRecordOnlyWhenAsked) {
  // {'bytes': b'\x00\x01'} in protocol 2: _codecs.encode('\x00\x01', 'latin1').
  const std::string codecs = bytes(
      "80027d7100580500000062797465737101635f636f646563730a656e636f64650a710258020000000001710358"
      "060000006c6174696e317104867105527106732e");
  pickle::Limits objects;
  objects.objects = true;
  auto d = pickle::parse(codecs, objects);
  ASSERT_TRUE(d) << d.error().message;
  const pickle::Node* call = d->get(d->root(), "bytes");
  ASSERT_TRUE(call && call->kind == Kind::object);
  EXPECT_EQ(d->type_name(*call), "_codecs.encode");
  const pickle::Node& args = d->at(call->items[1]);
  ASSERT_EQ(args.items.size(), 2u);
  EXPECT_EQ(d->at(args.items[0]).text, std::string("\x00\x01", 2));
  // Where each text's bytes lie: 'latin1' at 49, after BINUNICODE's length.
  EXPECT_EQ(d->at(args.items[1]).offset, 49u);
  EXPECT_EQ(codecs.substr(49, 6), "latin1");
  // An object whose state is itself (DUP, BUILD): a record, no attribute, no loop.
  auto self = pickle::parse(bytes("800263610a620a298132622e"), objects);
  ASSERT_TRUE(self) << self.error().message;
  EXPECT_EQ(self->get(self->root(), "x"), nullptr);
  EXPECT_FALSE(pickle::parse(bytes("80024b014b02622e"), objects));  // BUILD of no object
  EXPECT_FALSE(pickle::parse(bytes("800263610a"), objects));        // GLOBAL cut short
}

TEST(Pickle, NamesATruncatedDump) {
  const std::string whole = bytes(kProtocol5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{20}, whole.size() - 1}) {
    auto d = pickle::parse(whole.substr(0, n));
    ASSERT_FALSE(d) << n;
    EXPECT_NE(d.error().message.find("truncated"), std::string::npos) << d.error().message;
  }
}

TEST(Pickle, AContainerThatHoldsItselfIsACycleOfIndices) {
  // EMPTY_LIST, BINPUT 0, BINGET 0, APPEND, STOP: l = []; l.append(l)
  auto d = pickle::parse(bytes("5d71006800612e"));
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->root().items.size(), 1u);
  EXPECT_EQ(&d->at(d->root().items[0]), &d->root());
  // [x, x] with x = []: one node, named twice.
  auto shared = pickle::parse(bytes("80025d7100285d71016801652e"));
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->root().items[0], shared->root().items[1]);
}

TEST(Pickle, HoldsItsBounds) {
  pickle::Limits small;
  small.max_nodes = 5;
  auto d = pickle::parse(bytes(kProtocol5), small);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("bound"), std::string::npos);
  // A memo repeats a list without bytes: items in all containers are capped.
  small = {};
  small.max_items = 3;
  const std::string four = bytes(
      "5d710028680068006800680065"
      "2e");
  EXPECT_TRUE(pickle::parse(four));
  EXPECT_FALSE(pickle::parse(four, small));
  small = {};
  small.max_bytes = 4;
  EXPECT_FALSE(pickle::parse(bytes(kProtocol5), small));
  // Items without their container, a get of a key never put, two values at STOP.
  EXPECT_FALSE(pickle::parse(bytes("4b01652e")));
  EXPECT_FALSE(pickle::parse(bytes("68052e")));
  EXPECT_FALSE(pickle::parse(bytes("4b014b022e")));
  EXPECT_FALSE(pickle::parse(bytes("8a09000000000000000000012e")));  // wider than 64 bits
}

}  // namespace
}  // namespace dp::pickle_test
