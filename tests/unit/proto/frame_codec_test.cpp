// The frame codec alone: length-prefixed protobuf frames in, whole messages out.
#include "frame_codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace dp {
namespace {

TEST(FrameDecoder, ReassemblesPiecesAndRejectsOversize) {
  proto::Request r;
  r.set_id(3);
  r.mutable_set()->set_key("key");
  std::string bytes;
  ASSERT_TRUE(rdv::append_frame(r, bytes));
  ASSERT_TRUE(rdv::append_frame(r, bytes));
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

}  // namespace
}  // namespace dp
