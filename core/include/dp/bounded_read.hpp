// Reading a file whose size cannot be asked first (/proc files), bounded.
// Header-only, as unique_fd.hpp, so every part takes it.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "dp/unique_fd.hpp"

namespace dp {

inline constexpr size_t kFirstReadBytes = 16384;  // most /proc files fit: one read

// At most `max` bytes of the file `path` (relative to the directory `dir`,
// or AT_FDCWD), read to its end or to `max`: /proc files have no size to ask
// first. Empty when it cannot be opened. A final symlink is not followed.
inline std::string read_bounded_at(int dir, const char* path, size_t max) {
  std::string out;
  const UniqueFd file(::openat(dir, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!file) return out;
  // The buffer grows as the file proves long: a bound of 4 MiB (a process's
  // maps) must not cost 4 MiB of zeroed, faulted memory for a 40 KiB file.
  out.resize(max < kFirstReadBytes ? max : kFirstReadBytes);
  size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (got == max) break;
      out.resize(max - got < got ? max : 2 * got);
    }
    const ssize_t n = ::read(file.get(), out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

// The same for an absolute `path`.
inline std::string read_bounded(const std::string& path, size_t max) {
  return read_bounded_at(AT_FDCWD, path.c_str(), max);
}

}  // namespace dp
