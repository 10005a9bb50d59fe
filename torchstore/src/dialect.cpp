#include "dp/torchstore/dialect.hpp"

#include <cstdint>
#include <cstring>
#include <string>

namespace dp::torchstore {
namespace {

bool is_magic(std::string_view four) {
  uint32_t value = 0;
  std::memcpy(&value, four.data(), sizeof value);
  return value == kValidationMagic;
}

}  // namespace

Result<Detection> detect_dialect(std::string_view first, size_t max_key_bytes) {
  if (first.empty()) return Detection::need_more;
  // PyTorch 2.1-era development builds put the magic before every opcode; no
  // release we know of did, and 0xce is no legacy opcode: say what it is.
  if (static_cast<uint8_t>(first[0]) == (kValidationMagic & 0xff) && first.size() < 4)
    return Detection::need_more;  // the same answer however the bytes arrive
  if (first.size() >= 4 && is_magic(first.substr(0, 4)))
    return make_error(Errc::protocol,
                      "torch store: the connection opens with the magic 0x3C85F7CE and no VALIDATE "
                      "opcode before it (a PyTorch 2.1 development build?); closing");
  if (first[0] != '\0') return Detection::legacy;
  if (first.size() < kDialectBytes) return Detection::need_more;
  if (is_magic(first.substr(1, 4))) return Detection::v2;
  uint32_t low = 0;  // a legacy SET's key length, low half
  std::memcpy(&low, first.data() + 1, sizeof low);
  if (low > max_key_bytes)
    return make_error(Errc::protocol,
                      "torch store: the connection opens with 00 but no VALIDATE magic 0x3C85F7CE "
                      "(PyTorch 2.2+) nor a SET key length of at most " +
                          std::to_string(max_key_bytes) + " bytes (PyTorch 1.13/2.0); closing");
  return Detection::legacy;
}

}  // namespace dp::torchstore
