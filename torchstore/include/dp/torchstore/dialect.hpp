// Which dialect a connection speaks, from its first bytes: a PyTorch 2.2+
// client opens with VALIDATE, 00 then the magic 0x3C85F7CE as a uint32 in
// host order (00 ce f7 85 3c); anything else is PyTorch 1.13/2.0, whose SET
// is also 00 but is followed by a key length, never by the magic (that would
// be a key of about 1 GB, far over any limit). So a 00 followed by four bytes
// that are neither the magic nor the low half of a key length within the
// parser's key limit is a v2 client with a wrong magic, closed at once as
// PyTorch's server closes it.
#pragma once

#include <cstddef>
#include <string_view>

#include "dp/result.hpp"
#include "dp/torchstore/opcodes.hpp"

namespace dp::torchstore {

enum class Detection { need_more, legacy, v2 };

// The most bytes detect_dialect ever needs to decide.
inline constexpr size_t kDialectBytes = 5;

// need_more until the first byte is known (or, when it is 00, the first 5);
// an error for a connection that is neither, naming what it looks like.
Result<Detection> detect_dialect(std::string_view first_bytes, size_t max_key_bytes);

}  // namespace dp::torchstore
