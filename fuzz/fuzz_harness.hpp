// What the libFuzzer targets of the frame-driven cores share: the fixed step
// secret and nonce (make_seeds writes proofs for them) and four simulated
// connections, each fed through its own FrameDecoder exactly as the servers
// read a socket, so every target exercises the same decode loop.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "frame_codec.hpp"
#include "hello_proof.hpp"

namespace dp::fuzz {

inline constexpr const char* kSecret = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0";

// One start time for every target: an hour past the clock's zero, so the
// cores can look back from it.
inline constexpr auto kStartTime = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

inline std::string fixed_nonce() { return std::string(dp::rdv::kNonceBytes, 'z'); }

// An input read as records: an op byte, a length byte, then that many bytes
// (fewer at the input's end). The agent's targets read theirs this way.
struct Record {
  uint8_t op;
  const uint8_t* bytes;
  size_t len;
};
class Records {
 public:
  Records(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool next(Record& r) {
    if (pos_ >= size_) return false;
    r.op = data_[pos_++];
    r.len = pos_ < size_ ? data_[pos_++] : 0;
    r.len = std::min(r.len, size_ - pos_);
    r.bytes = data_ + pos_;
    pos_ += r.len;
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

// Every message a core sends must encode; a crash is the finding.
template <class Message>
void encode_or_abort(const Message& m) {
  std::string frame;
  if (!dp::rdv::append_frame(m, frame)) std::abort();
}

// The outbox side of a target: what the core closed, and nothing sent after.
template <class ConnId>
struct ClosedConns {
  std::set<ConnId> closed;
  void deliver(ConnId c, const dp::proto::Response& r) {
    if (closed.count(c)) std::abort();  // the core wrote to a connection it closed
    encode_or_abort(r);
  }
  void mark_closed(ConnId c) { closed.insert(c); }
};

template <class ConnId>
struct Connections {
  static constexpr int kCount = 4;
  ConnId ids[kCount]{};
  dp::rdv::FrameDecoder decoders[kCount] = {
      dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096), dp::rdv::FrameDecoder(4096),
      dp::rdv::FrameDecoder(4096)};
  ConnId next = 1;

  // Slot i gets a new connection (and a fresh decoder); returns its id.
  ConnId open(int i) {
    ids[i] = next++;
    decoders[i] = dp::rdv::FrameDecoder(4096);
    return ids[i];
  }

  // Feeds bytes to slot i and hands every whole frame to the core, which
  // must know the connection (a server stops reading a closed one).
  // on_oversized(id, length, head) and on_frame(id, payload) are the core's
  // entries; on_oversized's true skips the frame and reads on.
  // False when the connection was already closed (nothing was read).
  template <class Core, class Oversized, class Frame>
  bool feed(int i, const char* bytes, size_t len, Core& core, Oversized on_oversized,
            Frame on_frame) {
    if (!core.knows(ids[i])) return false;
    auto& dec = decoders[i];
    dec.feed(bytes, len);
    while (core.knows(ids[i])) {
      dec.set_max_frame_bytes(core.max_frame_bytes(ids[i]));
      dec.keep_oversized_heads();
      std::string_view payload;
      const auto st = dec.next(payload);
      if (st == dp::rdv::FrameDecoder::Status::need_more) break;
      if (st == dp::rdv::FrameDecoder::Status::too_large) {
        if (!on_oversized(ids[i], dec.frame_length(), dec.frame_head())) break;
        dec.skip_frame();
        continue;
      }
      on_frame(ids[i], payload);
    }
    return true;
  }
};

}  // namespace dp::fuzz
