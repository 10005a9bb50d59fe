// Length-prefixed protobuf frames of the rendezvous protocol, shared by the
// client and dp-rendezvousd: 4-byte big-endian length, then the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"
#include "frame_limits.hpp"

namespace dp::rdv {

inline constexpr size_t kFrameHeaderBytes = 4;

// Appends msg as one frame to out. False only if msg cannot be serialized.
bool append_frame(const google::protobuf::MessageLite& msg, std::string& out);

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
class FrameDecoder {
 public:
  enum class Status { need_more, frame, too_large };
  // An oversized frame's first body bytes that too_large waits for: enough
  // for the request id (field 1, which serializers write first).
  static constexpr size_t kHeadBytes = 16;

  explicit FrameDecoder(uint32_t max_frame_bytes) : max_frame_(max_frame_bytes) {}
  void set_max_frame_bytes(uint32_t n) { max_frame_ = n; }
  // For a reader that refuses an oversized request by its id and skips it:
  // too_large then waits for the frame's first kHeadBytes (or all of a
  // shorter one). Otherwise it comes as soon as the length is read.
  void keep_oversized_heads() { head_bytes_ = kHeadBytes; }

  void feed(const char* data, size_t n);
  // With Status::frame, payload views the frame body; it stays valid until
  // the next feed(). With too_large, frame_length() is the announced length
  // and frame_head() the first bytes of the body that are in.
  Status next(std::string_view& payload);
  uint32_t frame_length() const { return last_len_; }
  std::string_view frame_head() const;
  // After too_large: the frame is dropped, the bytes held and those still to
  // come as they arrive, never held; next() goes on with the frame after it
  // (a peer's over-limit request is refused, its connection kept).
  void skip_frame();
  size_t buffered() const { return buf_.size() - pos_; }
  // Gives memory back once the buffer is drained (idle connections stay small).
  void shrink_if_idle();

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint32_t max_frame_;
  uint32_t last_len_ = 0;
  size_t head_bytes_ = 0;   // of an oversized frame, before too_large
  uint64_t skip_left_ = 0;  // bytes of a skipped frame still to arrive
};

// The request id at the start of a request's body (its first bytes, as
// frame_head() gives them), when the sender wrote it first; 0 otherwise.
uint64_t leading_request_id(std::string_view head);

// Wire codes have the same numbers as dp::Errc.
proto::Code to_wire(Errc c) noexcept;
Errc from_wire(int code) noexcept;
Error error_from(const proto::Response& r);

}  // namespace dp::rdv
