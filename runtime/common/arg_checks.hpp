// Argument checks shared by every backend, so each bad call gets the same
// one-line message whichever backend runs.
#pragma once

#include <cstddef>
#include <string>

#include "dp/result.hpp"

namespace dp::detail {

inline Result<void> check_buffer(const char* op, const void* buf, size_t count) {
  if (buf == nullptr && count > 0) {
    return make_error(Errc::invalid_argument, std::string(op) + ": buffer is null but count is " +
                                                  std::to_string(count) +
                                                  "; pass a buffer of count elements");
  }
  return {};
}

inline Result<void> check_root(const char* op, int root, int size) {
  if (root < 0 || root >= size) {
    return make_error(Errc::invalid_argument, std::string(op) + ": root " + std::to_string(root) +
                                                  " is outside the world [0, " +
                                                  std::to_string(size - 1) + "]");
  }
  return {};
}

}  // namespace dp::detail
