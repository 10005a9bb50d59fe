// A compact str object's characters as UTF-8 (the walk's names and file
// names). Internal to the walk: the bit layout of PyASCIIObject.state is
// CPython's (the same from 3.8 to 3.14, GIL builds), not published in the
// debug offsets, which give only the state's and the header's place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace dp::stacks {

struct StringShape {
  unsigned kind;               // bytes a character: 1, 2 or 4
  uint64_t data_after_header;  // where the characters start, past PyASCIIObject
};

// From PyASCIIObject.state (interned:2, kind:3, compact:1, ascii:1): ASCII
// characters follow the PyASCIIObject header; other compact strings' follow
// PyCompactUnicodeObject, `compact_extra` bytes longer (utf8_length, utf8;
// before 3.12 also wstr_length). nullopt for a string that is not compact
// (none of a code object's names) or garbage.
std::optional<StringShape> compact_string_shape(uint32_t state, uint64_t compact_extra);

// Characters of `kind` bytes each as UTF-8; a code point that is not one
// (garbage, a lone surrogate) becomes '?'.
std::string utf8_of(std::span<const std::byte> data, unsigned kind);

// `text` cut to at most `max` bytes, at a character's start.
void cut_utf8(std::string& text, size_t max);

}  // namespace dp::stacks
