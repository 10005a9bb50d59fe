#include "frame_codec.hpp"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>

namespace dp::rdv {

bool append_frame(const google::protobuf::MessageLite& msg, std::string& out) {
  const size_t len = msg.ByteSizeLong();
  if (len > UINT32_MAX) return false;
  const size_t at = out.size();
  out.resize(at + kFrameHeaderBytes + len);
  auto* p = reinterpret_cast<unsigned char*>(out.data() + at);
  p[0] = static_cast<unsigned char>(len >> 24);
  p[1] = static_cast<unsigned char>(len >> 16);
  p[2] = static_cast<unsigned char>(len >> 8);
  p[3] = static_cast<unsigned char>(len);
  if (!msg.SerializeWithCachedSizesToArray(p + kFrameHeaderBytes)) {
    out.resize(at);
    return false;
  }
  return true;
}

void FrameDecoder::feed(const char* data, size_t n) {
  const size_t dropped = static_cast<size_t>(std::min<uint64_t>(skip_left_, n));
  skip_left_ -= dropped;
  data += dropped;
  n -= dropped;
  if (n == 0) return;
  // Compact before growing so a long-lived connection never accumulates.
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= buf_.size() / 2)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(data, n);
}

FrameDecoder::Status FrameDecoder::next(std::string_view& payload) {
  const size_t avail = buf_.size() - pos_;
  if (avail < kFrameHeaderBytes) return Status::need_more;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
  last_len_ =
      (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
  if (last_len_ > max_frame_) {
    const size_t head = std::min<size_t>(last_len_, head_bytes_);
    return avail < kFrameHeaderBytes + head ? Status::need_more : Status::too_large;
  }
  if (avail < kFrameHeaderBytes + last_len_) {
    // Room for the whole frame at once (address space, not memory, until it
    // arrives), not a copy at each doubling of a 16 MiB one.
    buf_.reserve(pos_ + kFrameHeaderBytes + last_len_);
    return Status::need_more;
  }
  payload = std::string_view(buf_.data() + pos_ + kFrameHeaderBytes, last_len_);
  pos_ += kFrameHeaderBytes + last_len_;
  return Status::frame;
}

std::string_view FrameDecoder::frame_head() const {
  const size_t avail = buffered() - std::min(buffered(), kFrameHeaderBytes);
  const size_t n = std::min({avail, kHeadBytes, size_t{last_len_}});
  return std::string_view(buf_).substr(pos_ + kFrameHeaderBytes, n);
}

void FrameDecoder::skip_frame() {
  const uint64_t whole = kFrameHeaderBytes + uint64_t{last_len_};
  const size_t held = static_cast<size_t>(std::min<uint64_t>(buffered(), whole));
  pos_ += held;
  skip_left_ = whole - held;
}

uint64_t leading_request_id(std::string_view head) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(head.data()),
                                            static_cast<int>(head.size()));
  uint64_t id = 0;
  constexpr uint32_t kIdTag = (1u << 3) | 0;  // field 1, varint
  if (in.ReadTag() != kIdTag || !in.ReadVarint64(&id)) return 0;
  return id;
}

void FrameDecoder::shrink_if_idle() {
  if (pos_ == buf_.size()) {
    pos_ = 0;
    if (buf_.capacity() > 4096) {
      std::string().swap(buf_);
    } else {
      buf_.clear();
    }
  }
}

proto::Code to_wire(Errc c) noexcept { return static_cast<proto::Code>(static_cast<int>(c)); }

Errc from_wire(int code) noexcept {
  if (code < 0 || code > static_cast<int>(Errc::internal)) return Errc::internal;
  return static_cast<Errc>(code);
}

Error error_from(const proto::Response& r) {
  return make_error(from_wire(r.code()),
                    r.message().empty() ? "rendezvous daemon reported an error" : r.message());
}

}  // namespace dp::rdv
