// The format (CPython's InternalDocs/code_objects.md): entries, each starting
// with a byte whose top bit is set, holding a kind (4 bits) and how many code
// units it covers (3 bits, plus one); varints of 6 bits a byte follow, bit 6
// saying another byte comes. Kinds: 0-9 short form (same line, one column
// byte), 10-12 one line (line delta 0-2, two column bytes), 13 no columns
// (signed line delta), 14 long (signed line delta, end line, columns), 15 no
// location. As CPython's own remote reader does (Modules/_remote_debugging),
// an instruction without a location keeps the line before it.
#include "dp/stacks/line_table.hpp"

namespace dp::stacks {
namespace {

enum Kind : unsigned { kOneLine0 = 10, kOneLine2 = 12, kNoColumns = 13, kLong = 14, kNone = 15 };

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> t) : t_(t) {}
  bool done() const { return at_ >= t_.size(); }
  // A byte inside an entry: never one with the top bit, which starts the next.
  std::optional<unsigned> inner() {
    if (done() || (t_[at_] & 0x80) != 0) return std::nullopt;
    return t_[at_++];
  }
  std::optional<unsigned> start() {
    if (done() || (t_[at_] & 0x80) == 0) return std::nullopt;
    return t_[at_++];
  }
  std::optional<uint32_t> varint() {
    uint32_t value = 0;
    for (unsigned shift = 0; shift <= 24; shift += 6) {
      auto b = inner();
      if (!b) return std::nullopt;
      value |= (*b & 63u) << shift;
      if ((*b & 64u) == 0) return value;
    }
    return std::nullopt;  // longer than any real delta: garbage
  }
  std::optional<int> signed_varint() {
    auto u = varint();
    if (!u) return std::nullopt;
    const int magnitude = static_cast<int>(*u >> 1);
    return (*u & 1u) != 0 ? -magnitude : magnitude;
  }
  bool skip_inner(int n) {
    for (int i = 0; i < n; ++i) {
      if (!inner()) return false;
    }
    return true;
  }

 private:
  std::span<const uint8_t> t_;
  size_t at_ = 0;
};

// Reads one entry's payload; returns its line delta, nullopt when malformed.
std::optional<int> entry_delta(Cursor& c, unsigned kind) {
  if (kind == kNone) return 0;
  if (kind == kNoColumns) return c.signed_varint();
  if (kind == kLong) {
    auto delta = c.signed_varint();
    if (!delta || !c.varint() || !c.varint() || !c.varint()) return std::nullopt;
    return delta;
  }
  if (kind >= kOneLine0 && kind <= kOneLine2) {
    if (!c.skip_inner(2)) return std::nullopt;
    return static_cast<int>(kind - kOneLine0);
  }
  if (!c.skip_inner(1)) return std::nullopt;  // short form: one column byte
  return 0;
}

}  // namespace

std::optional<int> line_for_instruction(std::span<const uint8_t> table, int first_line,
                                        uint64_t code_unit) {
  Cursor c(table);
  long long line = first_line;
  uint64_t unit = 0;
  while (!c.done()) {
    auto first = c.start();
    if (!first) return std::nullopt;
    const unsigned kind = (*first >> 3) & 15u;
    const uint64_t length = (*first & 7u) + 1;
    auto delta = entry_delta(c, kind);
    if (!delta) return std::nullopt;
    line += *delta;
    if (code_unit < unit + length) {
      if (line < 0 || line > INT32_MAX) return std::nullopt;
      return static_cast<int>(line);
    }
    unit += length;
  }
  return std::nullopt;
}

}  // namespace dp::stacks
