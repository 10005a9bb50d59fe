// The one owner of a file descriptor, and beside it of an open directory,
// for every part (the plugin's root code first): a descriptor is owned from
// the moment it exists and closed once, when its owner goes, so no early
// return can leak or double-close it.
// Header-only, with no library behind it, so the plugin takes it as the
// daemon and the agent do. Close by number only where no owner can be (a
// child between fork and exec), with a comment saying why.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "dp/result.hpp"
#include "dp/sys_error.hpp"

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

// An open directory (DIR*), read entry by entry and closed once.
class UniqueDir {
 public:
  explicit UniqueDir(const char* path) noexcept : d_(::opendir(path)) {}
  // The directory `fd` is open on (O_DIRECTORY); owned from here on, also
  // when fdopendir fails.
  explicit UniqueDir(UniqueFd fd) noexcept : d_(::fdopendir(fd.get())) {
    if (d_) fd.release();
  }
  UniqueDir(UniqueDir&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  UniqueDir& operator=(UniqueDir&& o) noexcept {
    if (this != &o) {
      close();
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  UniqueDir(const UniqueDir&) = delete;
  UniqueDir& operator=(const UniqueDir&) = delete;
  ~UniqueDir() { close(); }

  explicit operator bool() const noexcept { return d_ != nullptr; }
  // The next entry ("." and ".." too); nullptr at the end.
  const dirent* next() noexcept { return ::readdir(d_); }
  // Its descriptor, for *at() calls relative to it.
  int fd() const noexcept { return ::dirfd(d_); }

 private:
  void close() noexcept {
    if (d_) ::closedir(d_);
    d_ = nullptr;
  }
  DIR* d_ = nullptr;
};

// Both ends of a pipe, each owned.
struct PipeEnds {
  UniqueFd read, write;
};

// pipe2(flags), e.g. O_CLOEXEC; an error names the call.
inline Result<PipeEnds> make_pipe(int flags) {
  int fd[2];
  if (::pipe2(fd, flags) != 0) return sys_error(Errc::internal, "pipe2");
  return PipeEnds{UniqueFd(fd[0]), UniqueFd(fd[1])};
}

}  // namespace dp
