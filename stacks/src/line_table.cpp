// The format (CPython's InternalDocs/code_objects.md): entries, each starting
// with a byte whose top bit is set, holding a kind (4 bits) and how many code
// units it covers (3 bits, plus one); varints of 6 bits a byte follow, bit 6
// saying another byte comes. Kinds: 0-9 short form (same line; the kind is
// the column's high bits, one byte its low 3 bits and the span's length),
// 10-12 one line (line delta 0-2, column and end column bytes), 13 no columns
// (signed line delta), 14 long (signed line delta, end line delta, column +
// 1, end column + 1), 15 no location. As CPython's own remote reader does
// (Modules/_remote_debugging), an instruction without a location keeps the
// line before it.
#include "dp/stacks/line_table.hpp"

#include <algorithm>

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

 private:
  std::span<const uint8_t> t_;
  size_t at_ = 0;
};

// One entry's payload: its line delta and, where the entry has them, its
// end line (as a delta) and columns. nullopt when malformed.
struct Entry {
  int delta = 0, end_delta = 0, column = -1, end_column = -1;
  bool located = true;  // false for "no location": the line before it is kept
};

std::optional<Entry> entry(Cursor& c, unsigned kind) {
  Entry e;
  if (kind == kNone) {
    e.located = false;
    return e;
  }
  if (kind == kNoColumns) {
    auto delta = c.signed_varint();
    if (!delta) return std::nullopt;
    e.delta = *delta;
    return e;
  }
  if (kind == kLong) {
    auto delta = c.signed_varint();
    auto end = delta ? c.varint() : std::nullopt;
    auto column = end ? c.varint() : std::nullopt;  // each stored plus one: 0 is "none"
    auto end_column = column ? c.varint() : std::nullopt;
    if (!end_column) return std::nullopt;
    e.delta = *delta;
    e.end_delta = static_cast<int>(std::min<uint32_t>(*end, INT32_MAX));
    e.column = static_cast<int>(*column) - 1;
    e.end_column = static_cast<int>(*end_column) - 1;
    return e;
  }
  if (kind >= kOneLine0 && kind <= kOneLine2) {
    auto column = c.inner();
    auto end_column = column ? c.inner() : std::nullopt;
    if (!end_column) return std::nullopt;
    e.delta = static_cast<int>(kind - kOneLine0);
    e.column = static_cast<int>(*column);
    e.end_column = static_cast<int>(*end_column);
    return e;
  }
  auto second = c.inner();  // short form: the column's low 3 bits and the length
  if (!second) return std::nullopt;
  e.column = static_cast<int>(kind << 3 | *second >> 4);
  e.end_column = e.column + static_cast<int>(*second & 15u);
  return e;
}

// The entry that covers `code_unit`, with the line it starts on.
struct Found {
  Entry e;
  long long line;
};

std::optional<Found> find(std::span<const uint8_t> table, int first_line, uint64_t code_unit) {
  Cursor c(table);
  long long line = first_line;
  uint64_t unit = 0;
  while (!c.done()) {
    auto first = c.start();
    if (!first) return std::nullopt;
    const unsigned kind = (*first >> 3) & 15u;
    const uint64_t length = (*first & 7u) + 1;
    auto e = entry(c, kind);
    if (!e) return std::nullopt;
    line += e->delta;
    if (code_unit < unit + length) {
      if (line < 0 || line > INT32_MAX) return std::nullopt;
      return Found{*e, line};
    }
    unit += length;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> line_for_instruction(std::span<const uint8_t> table, int first_line,
                                        uint64_t code_unit) {
  auto f = find(table, first_line, code_unit);
  if (!f) return std::nullopt;
  return static_cast<int>(f->line);
}

std::optional<SourceSpan> span_for_instruction(std::span<const uint8_t> table, int first_line,
                                               uint64_t code_unit) {
  auto f = find(table, first_line, code_unit);
  if (!f || !f->e.located || f->e.column < 0 || f->e.end_column < 0) return std::nullopt;
  const long long end_line = f->line + f->e.end_delta;
  if (end_line > INT32_MAX) return std::nullopt;
  return SourceSpan{static_cast<int>(f->line), static_cast<int>(end_line), f->e.column,
                    f->e.end_column};
}

// Each pair advances the address first; the line moves only while the
// address stays at or below the one asked for.
int line_for_lnotab(std::span<const uint8_t> table, int first_line, int64_t byte) {
  long long line = first_line;
  int64_t address = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    address += table[i];
    if (address > byte) break;
    line += static_cast<int8_t>(table[i + 1]);
  }
  return line < 0 || line > INT32_MAX ? -1 : static_cast<int>(line);
}

// Ranges of zero length fold into the next, whose line they move.
std::optional<int> line_for_pairs(std::span<const uint8_t> table, int first_line, int64_t byte) {
  if (byte < 0) return first_line;
  long long computed = first_line, line = -1;
  int64_t end = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    const int64_t start = end;
    end += table[i];
    const int delta = static_cast<int8_t>(table[i + 1]);
    line = delta == -128 ? -1 : (computed += delta);
    if (start != end && byte < end) break;
  }
  if (byte >= end || line < 0 || line > INT32_MAX) return std::nullopt;
  return static_cast<int>(line);
}

}  // namespace dp::stacks
