// The step's store limits (--dp-store=step): at least PyTorch's own, the caps
// of its libuv server (the classic one has none), so no request PyTorch's
// server takes is refused for its size. One place for the node agent's
// parser (torchstore::Limits), the daemon (BrokerLimits, dp-rendezvousd
// --max-key-bytes, --max-value-bytes, --max-request-bytes) and README.md's
// store section.
#pragma once

#include <cstdint>

namespace dp {

inline constexpr uint32_t kStoreKeyBytes = 8u << 10;    // one key
inline constexpr uint32_t kStoreValueBytes = 8u << 20;  // one value
// One whole request as PyTorch's client sends it (a multi_set by its total,
// each key and value with its 8-byte length): room for two of the largest
// values, so a multi_set of 3 x 3 MiB or 8 MiB and a few small ones passes.
inline constexpr uint32_t kStoreRequestBytes = 16u << 20;

}  // namespace dp
