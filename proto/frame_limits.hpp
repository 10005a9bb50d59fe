// Frame size limits every end of the rendezvous protocol shares (daemon,
// node agent, client). No protobuf here: public-facing headers include it.
#pragma once

#include <cstdint>

namespace dp::rdv {

// Before a peer is authenticated (challenge, hello, its reply) frames stay
// tiny: whatever listens or connects there is not trusted with more.
inline constexpr uint32_t kHelloFrameLimit = 4096;
// After hello: the daemon's largest value (256 MiB) and room for its envelope.
inline constexpr uint32_t kMaxFrameBytes = (256u << 20) + 65'536;
// A request's frame beyond its keys and values (id, key space, field tags and
// lengths: protobuf spends fewer bytes on each than PyTorch's 8-byte lengths,
// so a store request within its limit always fits the daemon's frame).
inline constexpr uint32_t kRequestEnvelopeBytes = 1024;

}  // namespace dp::rdv
