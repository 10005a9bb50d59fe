// The one owner of a file descriptor, for every part (the plugin's root code
// first): a descriptor is owned from the moment it exists and closed once,
// when its owner goes, so no early return can leak or double-close it.
// Header-only, with no library behind it, so the plugin takes it as the
// daemon and the agent do. Close by number only where no owner can be (a
// child between fork and exec), with a comment saying why.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "dp/result.hpp"

namespace dp {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the one held, if any (EINTR too: Linux has closed it already).
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Both ends of a pipe, each owned.
struct PipeEnds {
  UniqueFd read, write;
};

// pipe2(flags), e.g. O_CLOEXEC; an error names the call.
inline Result<PipeEnds> make_pipe(int flags) {
  int fd[2];
  if (::pipe2(fd, flags) != 0)
    return make_error(Errc::internal, std::string("pipe2: ") + std::strerror(errno));
  return PipeEnds{UniqueFd(fd[0]), UniqueFd(fd[1])};
}

}  // namespace dp
