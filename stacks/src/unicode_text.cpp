#include "unicode_text.hpp"

#include <cstring>

namespace dp::stacks {
namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace

std::optional<StringShape> compact_string_shape(uint32_t state, uint64_t compact_extra) {
  const unsigned kind = (state >> 2) & 7u;
  const bool compact = (state >> 5) & 1u;
  const bool ascii = (state >> 6) & 1u;
  if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1)) {
    return std::nullopt;
  }
  return StringShape{kind, ascii ? 0u : compact_extra};
}

std::string utf8_of(std::span<const std::byte> data, unsigned kind) {
  std::string out;
  out.reserve(data.size());
  for (size_t at = 0; at + kind <= data.size(); at += kind) {
    uint32_t cp = 0;
    if (kind == 1) cp = static_cast<uint8_t>(data[at]);
    if (kind == 2) {
      uint16_t u = 0;
      std::memcpy(&u, data.data() + at, sizeof u);
      cp = u;
    }
    if (kind == 4) std::memcpy(&cp, data.data() + at, sizeof cp);
    const bool valid = cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
    append_utf8(out, valid ? cp : '?');
  }
  return out;
}

void cut_utf8(std::string& text, size_t max) {
  if (text.size() <= max) return;
  while (max > 0 && (static_cast<uint8_t>(text[max]) & 0xc0) == 0x80) --max;
  text.resize(max);
}

}  // namespace dp::stacks
