// The client's side of the wire: turns the daemon's byte stream into
// validated responses. It runs wherever the client does, slurmstepd (root)
// included, against whatever answers on DP_RDV_ADDR, so every frame is
// bounded (a frame over the limit is an error, never an allocation), every
// value is checked, and text is made printable before anyone logs it.
// No exception leaves it. The fuzz harness drives it directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "frame_codec.hpp"
#include "tcp_connect.hpp"

namespace dp::rdv {

class ReplyReader {
 public:
  explicit ReplyReader(uint32_t max_frame_bytes)
      : decoder_(max_frame_bytes), max_(max_frame_bytes) {}
  // The hello needs small frames only; the I/O thread then takes over the
  // same reader (and whatever it buffered) with the client's limit.
  void set_max_frame_bytes(uint32_t n) {
    decoder_.set_max_frame_bytes(n);
    max_ = n;
  }

  // Buffers bytes as they arrive (error: out of memory).
  Result<void> feed(const char* data, size_t n) noexcept;
  // The next complete response, or nullopt when more bytes are needed. An
  // error (oversized or malformed frame, invalid field) leaves the stream unusable.
  Result<std::optional<proto::Response>> next() noexcept;

 private:
  Result<std::optional<proto::Response>> parse_one();

  FrameDecoder decoder_;
  uint32_t max_;
};

// The next response on a fresh, non-blocking socket before the deadline,
// while no I/O thread owns it (the hello of a rank or of a node agent).
// `what` names the awaited reply, `peer` the daemon, in the errors.
Result<proto::Response> read_reply(int fd, ReplyReader& reader, Deadline deadline, const char* what,
                                   const char* peer);

// The response is well formed: a known code, a push (id 0) that is a
// challenge, an abort or a keepalive, a challenge of the right size.
Result<void> validate(const proto::Response& r);

}  // namespace dp::rdv
