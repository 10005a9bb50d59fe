// The frame codec alone: length-prefixed protobuf frames in, whole messages out.
#include "frame_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dp {
namespace {

// Requests as a peer sends them: one frame each, back to back.
std::string frames_of(std::initializer_list<proto::Request> requests) {
  std::string bytes;
  for (const proto::Request& r : requests) EXPECT_TRUE(rdv::append_frame(r, bytes));
  return bytes;
}

TEST(FrameDecoder, ReassemblesPiecesAndRejectsOversize) {
  proto::Request r;
  r.set_id(3);
  r.mutable_set()->set_key("key");
  const std::string bytes = frames_of({r, r});
  rdv::FrameDecoder d(1024);
  int frames = 0;
  for (char c : bytes) {
    d.feed(&c, 1);
    std::string_view p;
    while (d.next(p) == rdv::FrameDecoder::Status::frame) {
      proto::Request got;
      ASSERT_TRUE(got.ParseFromArray(p.data(), static_cast<int>(p.size())));
      EXPECT_EQ(got.set().key(), "key");
      ++frames;
    }
  }
  EXPECT_EQ(frames, 2);
  rdv::FrameDecoder small(4);
  small.feed(bytes.data(), bytes.size());
  std::string_view p;
  EXPECT_EQ(small.next(p), rdv::FrameDecoder::Status::too_large);
}

// An over-limit request is refused under its own id and dropped as its bytes
// arrive, never held; the frame after it decodes as usual.
TEST(FrameDecoder, AnOversizedFrameIsSkippedAndItsIdRead) {
  proto::Request big;
  big.set_id(300);
  big.set_space(proto::SPACE_TORCH);
  big.mutable_set()->set_key("/huge");
  big.mutable_set()->set_value(std::string(5000, 'v'));
  proto::Request next;
  next.set_id(301);
  next.mutable_get()->set_key("/k");
  const std::string bytes = frames_of({big, next});
  rdv::FrameDecoder d(1024);
  d.keep_oversized_heads();
  std::string_view p;
  d.feed(bytes.data(), 10);  // the header and 6 bytes: not yet the head
  EXPECT_EQ(d.next(p), rdv::FrameDecoder::Status::need_more);
  d.feed(bytes.data() + 10, 100);
  ASSERT_EQ(d.next(p), rdv::FrameDecoder::Status::too_large);
  EXPECT_EQ(d.frame_length(), big.ByteSizeLong());
  EXPECT_EQ(rdv::leading_request_id(d.frame_head()), 300u);
  d.skip_frame();
  EXPECT_EQ(d.buffered(), 0u);
  for (size_t at = 110; at < bytes.size(); at += 700) {
    d.feed(bytes.data() + at, std::min<size_t>(700, bytes.size() - at));
    EXPECT_LE(d.buffered(), next.ByteSizeLong() + rdv::kFrameHeaderBytes);  // never the big one
  }
  ASSERT_EQ(d.next(p), rdv::FrameDecoder::Status::frame);
  proto::Request got;
  ASSERT_TRUE(got.ParseFromArray(p.data(), static_cast<int>(p.size())));
  EXPECT_EQ(got.id(), 301u);
  EXPECT_EQ(d.next(p), rdv::FrameDecoder::Status::need_more);
}

TEST(FrameDecoder, ARequestIdNotWrittenFirstReadsAsZero) {
  EXPECT_EQ(rdv::leading_request_id(""), 0u);
  EXPECT_EQ(rdv::leading_request_id("\x1a\x03key"), 0u);  // field 3 first
  EXPECT_EQ(rdv::leading_request_id("\x08\xff"), 0u);     // a varint cut short
  EXPECT_EQ(rdv::leading_request_id("\x08\x07"), 7u);
}

}  // namespace
}  // namespace dp
