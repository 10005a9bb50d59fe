// Lower-case hex of raw bytes: the step secret and the digests the tests
// check against published vectors are written the same way.
#pragma once

#include <span>
#include <string>

namespace dp {

inline std::string to_hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

}  // namespace dp
