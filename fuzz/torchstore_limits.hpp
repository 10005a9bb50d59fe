// The PyTorch store fuzz targets' caps: small, so that inputs reach them.
#pragma once

#include "dp/torchstore/parser.hpp"

namespace dp::fuzz {

inline torchstore::Limits small_store_limits() {
  torchstore::Limits l;
  l.key_bytes = 64;
  l.value_bytes = 256;
  l.keys = 16;
  l.request_bytes = 1024;
  l.buffered_bytes = 1024 + 64;
  return l;
}

}  // namespace dp::fuzz
