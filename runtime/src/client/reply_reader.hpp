// The client's side of the wire: turns the daemon's byte stream into
// validated responses. It runs wherever the client does, slurmstepd (root)
// included, against whatever answers on DP_RDV_ADDR, so every frame is
// bounded (a frame over the limit is an error, never an allocation), every
// value is checked, and text is made printable before anyone logs it.
// No exception leaves it. The fuzz harness drives it directly.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "frame_codec.hpp"

namespace dp::rdv {

class ReplyReader {
 public:
  explicit ReplyReader(uint32_t max_frame_bytes) : decoder_(max_frame_bytes), max_(max_frame_bytes) {}

  // Takes bytes as they arrive and parses every complete frame. An error
  // (malformed or oversized frame, invalid field) leaves the stream unusable.
  Result<void> feed(const char* data, size_t n) noexcept;
  // Parsed responses, oldest first.
  bool has_reply() const { return !ready_.empty(); }
  proto::Response take();

 private:
  Result<void> parse_frames();

  FrameDecoder decoder_;
  uint32_t max_;
  std::deque<proto::Response> ready_;
};

// Server text before it reaches a log, an error or Slurm: printable ASCII,
// at most 1 024 bytes, marked when cut.
std::string sanitized(std::string_view text);

// The response is well formed: a known code, a push (id 0) that is a
// challenge, an abort or a keepalive, a challenge of the right size.
Result<void> validate(const proto::Response& r);

}  // namespace dp::rdv
