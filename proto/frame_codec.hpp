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

// 2: challenge-response hello; 3: its proof's input length-prefixed (hello_proof.hpp)
inline constexpr uint32_t kProtocolVersion = 3;
inline constexpr size_t kFrameHeaderBytes = 4;

// Appends msg as one frame to out. False only if msg cannot be serialized.
bool append_frame(const google::protobuf::MessageLite& msg, std::string& out);

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
class FrameDecoder {
 public:
  enum class Status { need_more, frame, too_large };

  explicit FrameDecoder(uint32_t max_frame_bytes) : max_frame_(max_frame_bytes) {}
  void set_max_frame_bytes(uint32_t n) { max_frame_ = n; }

  void feed(const char* data, size_t n);
  // With Status::frame, payload views the frame body; it stays valid until
  // the next feed(). With too_large, frame_length() is the announced length.
  Status next(std::string_view& payload);
  uint32_t frame_length() const { return last_len_; }
  size_t buffered() const { return buf_.size() - pos_; }
  // Gives memory back once the buffer is drained (idle connections stay small).
  void shrink_if_idle();

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint32_t max_frame_;
  uint32_t last_len_ = 0;
};

// Wire codes have the same numbers as dp::Errc.
proto::Code to_wire(Errc c) noexcept;
Errc from_wire(int code) noexcept;
Error error_from(const proto::Response& r);

}  // namespace dp::rdv
