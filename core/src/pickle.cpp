#include "dp/pickle.hpp"

#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace dp::pickle {
namespace {

constexpr uint32_t kMark = std::numeric_limits<uint32_t>::max();

class Parser {
 public:
  Parser(std::string_view in, const Limits& limits) : in_(in), limits_(limits) {}
  Result<Document> run();

 private:
  Result<void> step(uint8_t op);
  Result<void> scalar(uint8_t op, bool& done);
  Result<void> container(uint8_t op, bool& done);
  Result<void> memo_op(uint8_t op, bool& done);
  Error fail(const std::string& what) const {
    return make_error(Errc::protocol, "pickle: " + what + " at offset " + std::to_string(at_));
  }
  Result<std::string_view> take(uint64_t n) {
    if (n > in_.size() - pos_) return fail("truncated input (a dump still being written?)");
    const auto s = in_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  Result<uint64_t> le(int bytes) {  // an unsigned little-endian number
    auto s = take(static_cast<uint64_t>(bytes));
    DP_TRY(s);
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
      v = (v << 8) | static_cast<uint8_t>((*s)[static_cast<size_t>(i)]);
    return v;
  }
  Result<uint32_t> make(Node n) {
    if (nodes_.size() >= limits_.max_nodes) return fail("more values than the bound");
    nodes_.push_back(std::move(n));
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  Result<void> push(Result<uint32_t> node) {
    DP_TRY(node);
    if (stack_.size() >= limits_.max_stack) return fail("a stack deeper than the bound");
    stack_.push_back(*node);
    return {};
  }
  Result<uint32_t> pop() {
    if (stack_.empty() || stack_.back() == kMark) return fail("an opcode without its operand");
    const uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The values above the topmost mark, which is removed.
  Result<std::vector<uint32_t>> pop_to_mark();
  Result<void> extend(uint32_t target, const std::vector<uint32_t>& values, Kind want);
  Result<void> text(uint64_t n) {
    const size_t at = pos_;
    auto s = take(n);
    DP_TRY(s);
    Node t;
    t.kind = Kind::text;
    t.offset = static_cast<uint32_t>(at);
    t.text = std::string(*s);
    return push(make(std::move(t)));
  }
  Result<std::string_view> line();  // GLOBAL's operands: up to '\n'
  Result<void> object(uint8_t op, bool& done);
  Result<void> set_op(uint8_t op, bool& done);
  // Text whose length comes first, in `width` bytes.
  Result<void> counted_text(int width) {
    auto n = le(width);
    DP_TRY(n);
    return text(*n);
  }

  std::string_view in_;
  Limits limits_;
  size_t pos_ = 0, at_ = 0, items_ = 0;
  std::vector<Node> nodes_;
  std::vector<uint32_t> stack_;
  std::unordered_map<uint64_t, uint32_t> memo_;
};

Result<std::vector<uint32_t>> Parser::pop_to_mark() {
  size_t m = stack_.size();
  while (m > 0 && stack_[m - 1] != kMark) --m;
  if (m == 0) return fail("no mark");
  std::vector<uint32_t> values(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
  stack_.resize(m - 1);
  return values;
}

Result<void> Parser::extend(uint32_t target, const std::vector<uint32_t>& values, Kind want) {
  if (nodes_[target].kind != want) return fail("items added to a value that is not a container");
  if (want == Kind::dict && values.size() % 2) return fail("a key without its value");
  items_ += values.size();
  if (items_ > limits_.max_items) return fail("more items than the bound");
  auto& items = nodes_[target].items;
  items.insert(items.end(), values.begin(), values.end());
  return {};
}

Result<void> Parser::scalar(uint8_t op, bool& done) {
  Node n;
  switch (op) {
    case 'N': break;
    case 0x88:
    case 0x89: n.kind = Kind::boolean, n.integer = op == 0x88; break;
    case 'J': {
      auto v = le(4);
      DP_TRY(v);
      n.kind = Kind::integer, n.integer = static_cast<int32_t>(static_cast<uint32_t>(*v));
      break;
    }
    case 'K':
    case 'M': {
      auto v = le(op == 'K' ? 1 : 2);
      DP_TRY(v);
      n.kind = Kind::integer, n.integer = static_cast<int64_t>(*v);
      break;
    }
    case 0x8a:
    case 0x8b: {  // LONG1, LONG4: two's complement, little-endian
      auto len = le(op == 0x8a ? 1 : 4);
      DP_TRY(len);
      if (*len > 8) return fail("an integer wider than 64 bits");
      auto v = le(static_cast<int>(*len));
      DP_TRY(v);
      uint64_t u = *v;
      if (*len > 0 && *len < 8 && (u >> (8 * *len - 1)) & 1) u |= ~uint64_t{0} << (8 * *len);
      n.kind = Kind::integer, n.integer = static_cast<int64_t>(u);
      break;
    }
    case 'G': {  // big-endian IEEE double
      auto s = take(8);
      DP_TRY(s);
      uint64_t u = 0;
      for (char c : *s) u = (u << 8) | static_cast<uint8_t>(c);
      n.kind = Kind::real;
      std::memcpy(&n.real, &u, sizeof u);
      break;
    }
    default: done = false; return {};
  }
  return push(make(std::move(n)));
}

Result<void> Parser::container(uint8_t op, bool& done) {
  auto made = [&](Kind k, std::vector<uint32_t> items) -> Result<void> {
    items_ += items.size();
    if (items_ > limits_.max_items) return fail("more items than the bound");
    Node n;
    n.kind = k;
    n.items = std::move(items);
    return push(make(std::move(n)));
  };
  switch (op) {
    case ']':
    case ')': return made(Kind::list, {});
    case '}': return made(Kind::dict, {});
    case 'l':
    case 't':
    case 'd': {
      auto v = pop_to_mark();
      DP_TRY(v);
      if (op == 'd' && v->size() % 2) return fail("a key without its value");
      return made(op == 'd' ? Kind::dict : Kind::list, std::move(*v));
    }
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      std::vector<uint32_t> items(static_cast<size_t>(op - 0x84));
      for (size_t i = items.size(); i-- > 0;) {
        auto v = pop();
        DP_TRY(v);
        items[i] = *v;
      }
      return made(Kind::list, std::move(items));
    }
    case 'a':
    case 's': {
      std::vector<uint32_t> values(op == 'a' ? 1 : 2);
      for (size_t i = values.size(); i-- > 0;) {
        auto v = pop();
        DP_TRY(v);
        values[i] = *v;
      }
      if (stack_.empty() || stack_.back() == kMark) return fail("no container to add to");
      return extend(stack_.back(), values, op == 'a' ? Kind::list : Kind::dict);
    }
    case 'e':
    case 'u': {
      auto v = pop_to_mark();
      DP_TRY(v);
      if (stack_.empty() || stack_.back() == kMark) return fail("no container to add to");
      return extend(stack_.back(), *v, op == 'e' ? Kind::list : Kind::dict);
    }
    default: done = false; return {};
  }
}

Result<void> Parser::set_op(uint8_t op, bool& done) {
  switch (op) {
    case 0x8f: {  // EMPTY_SET
      Node n;
      n.kind = Kind::set;
      return push(make(std::move(n)));
    }
    case 0x90: {  // ADDITEMS
      auto v = pop_to_mark();
      DP_TRY(v);
      if (stack_.empty() || stack_.back() == kMark) return fail("no set to add to");
      return extend(stack_.back(), *v, Kind::set);
    }
    case 0x91: {  // FROZENSET
      auto v = pop_to_mark();
      DP_TRY(v);
      items_ += v->size();
      if (items_ > limits_.max_items) return fail("more items than the bound");
      Node n;
      n.kind = Kind::set;
      n.items = std::move(*v);
      return push(make(std::move(n)));
    }
    default: done = false; return {};
  }
}

Result<std::string_view> Parser::line() {
  const size_t end = in_.find('\n', pos_);
  if (end == std::string_view::npos) return fail("truncated input (a line without its end)");
  const auto s = in_.substr(pos_, end - pos_);
  pos_ = end + 1;
  return s;
}

// Records only: a type is its name, an object its type, arguments and state.
Result<void> Parser::object(uint8_t op, bool& done) {
  if (op != 'c' && op != 0x93 && op != 'R' && op != 0x81 && op != 'b') {
    done = false;
    return {};
  }
  if (!limits_.objects)
    return fail("a class named or called, outside the subset of built-in values");
  Node n;
  switch (op) {
    case 'c': {  // GLOBAL: module and name, a line each
      auto module = line();
      DP_TRY(module);
      auto name = line();
      DP_TRY(name);
      n.kind = Kind::type;
      n.text = std::string(*module) + "." + std::string(*name);
      break;
    }
    case 0x93: {  // STACK_GLOBAL: module and name from the stack
      auto name = pop();
      DP_TRY(name);
      auto module = pop();
      DP_TRY(module);
      if (nodes_[*module].kind != Kind::text || nodes_[*name].kind != Kind::text)
        return fail("STACK_GLOBAL of a value that is not text");
      n.kind = Kind::type;
      n.text = nodes_[*module].text + "." + nodes_[*name].text;
      break;
    }
    case 'R':
    case 0x81: {  // REDUCE, NEWOBJ: a callable or class and its arguments
      auto args = pop();
      DP_TRY(args);
      auto type = pop();
      DP_TRY(type);
      if (nodes_[*args].kind != Kind::list) return fail("arguments that are no tuple");
      n.kind = Kind::object;
      n.items = {*type, *args};
      break;
    }
    default: {  // BUILD: the object below takes the state on top
      auto state = pop();
      DP_TRY(state);
      if (stack_.empty() || stack_.back() == kMark) return fail("BUILD without an object");
      Node& target = nodes_[stack_.back()];
      if (target.kind != Kind::object || target.items.size() != 2)
        return fail("BUILD of a value that is no object, or one built before");
      target.items.push_back(*state);
      return {};
    }
  }
  return push(make(std::move(n)));
}

Result<void> Parser::memo_op(uint8_t op, bool& done) {
  switch (op) {
    case 'q':
    case 'r':
    case 0x94: {  // BINPUT, LONG_BINPUT, MEMOIZE: the top of the stack
      uint64_t key = memo_.size();
      if (op != 0x94) {
        auto k = le(op == 'q' ? 1 : 4);
        DP_TRY(k);
        key = *k;
      }
      if (stack_.empty() || stack_.back() == kMark) return fail("nothing to memoize");
      if (memo_.size() >= limits_.max_nodes) return fail("a memo larger than the bound");
      memo_[key] = stack_.back();
      return {};
    }
    case 'h':
    case 'j': {
      auto k = le(op == 'h' ? 1 : 4);
      DP_TRY(k);
      const auto it = memo_.find(*k);
      if (it == memo_.end()) return fail("a memo key never put");
      if (stack_.size() >= limits_.max_stack) return fail("a stack deeper than the bound");
      stack_.push_back(it->second);
      return {};
    }
    default: done = false; return {};
  }
}

Result<void> Parser::step(uint8_t op) {
  bool done = true;
  switch (op) {
    case 0x80: return le(1) ? Result<void>() : fail("truncated input");  // PROTO
    case 0x95: return le(8) ? Result<void>() : fail("truncated input");  // FRAME: a hint only
    case '(':
      if (stack_.size() >= limits_.max_stack) return fail("a stack deeper than the bound");
      stack_.push_back(kMark);
      return {};
    case '0': return pop() ? Result<void>() : fail("POP of nothing");
    case '1': return pop_to_mark() ? Result<void>() : fail("POP_MARK without a mark");
    case '2':
      if (stack_.empty() || stack_.back() == kMark) return fail("DUP of nothing");
      return push(stack_.back());
    case 'X':
    case 'B':
    case 'T': return counted_text(4);
    case 0x8c:
    case 'C':
    case 'U': return counted_text(1);
    case 0x8d:
    case 0x8e: return counted_text(8);
    default: break;
  }
  // Each family of opcodes in turn; one that is not its own says so (done = false).
  using Family = Result<void> (Parser::*)(uint8_t, bool&);
  for (Family family :
       {&Parser::scalar, &Parser::container, &Parser::memo_op, &Parser::set_op, &Parser::object}) {
    done = true;
    auto r = (this->*family)(op, done);
    if (done) return r;
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", op);
  return fail(std::string("opcode ") + hex + " is outside the subset of built-in values");
}

Result<Document> Parser::run() {
  if (in_.size() > limits_.max_bytes || in_.size() > UINT32_MAX)
    return fail("input larger than the bound");
  while (pos_ < in_.size()) {
    at_ = pos_;
    const auto op = static_cast<uint8_t>(in_[pos_++]);
    if (op == '.') {
      if (stack_.size() != 1 || stack_.back() == kMark) return fail("STOP without one value");
      return Document(std::move(nodes_), stack_.back());
    }
    DP_TRY(step(op));
  }
  at_ = pos_;
  return fail("truncated input (no STOP; a dump still being written?)");
}

}  // namespace

const Node* Document::get(const Node& n, std::string_view key) const {
  if (n.kind == Kind::object) {  // its state, once a dict (never another object: no cycle)
    const Node* state = n.items.size() > 2 ? &nodes_[n.items[2]] : nullptr;
    return state && state->kind == Kind::dict ? get(*state, key) : nullptr;
  }
  if (n.kind != Kind::dict) return nullptr;
  for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
    const Node& k = nodes_[n.items[i]];
    if (k.kind == Kind::text && k.text == key) return &nodes_[n.items[i + 1]];
  }
  return nullptr;
}

std::string_view Document::type_name(const Node& n) const {
  if (n.kind != Kind::object || n.items.empty()) return {};
  const Node& t = nodes_[n.items[0]];
  return t.kind == Kind::type ? std::string_view(t.text) : std::string_view();
}

Result<Document> parse(std::string_view bytes, const Limits& limits) {
  return Parser(bytes, limits).run();
}

}  // namespace dp::pickle
