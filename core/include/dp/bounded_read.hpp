// Reading a file whose size cannot be asked first (/proc files), bounded.
// Header-only, as unique_fd.hpp, so every part takes it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "dp/unique_fd.hpp"

namespace dp {

// At most `max` bytes of the file `path` (relative to the directory `dir`,
// or AT_FDCWD), read to its end or to `max`: /proc files have no size to ask
// first. Empty when it cannot be opened. A final symlink is not followed.
inline std::string read_bounded_at(int dir, const char* path, size_t max) {
  std::string out;
  const UniqueFd file(::openat(dir, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!file) return out;
  out.resize(max);
  size_t got = 0;
  while (got < max) {
    const ssize_t n = ::read(file.get(), out.data() + got, max - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace dp
