// A failed system call as a value: errno's text, and the error that names the
// call before it. Header-only, as unique_fd.hpp, so every part takes it.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "dp/result.hpp"

namespace dp {

// strerror's text for `e` (the caller saves errno first when anything runs
// between the call and this).
inline std::string errno_text(int e = errno) { return std::strerror(e); }

// "what: <errno's text>" as an error of `code`, made at the caller's place.
inline Error sys_error(Errc code, const std::string& what, int e = errno,
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return make_error(code, what + ": " + errno_text(e), file, line);
}

}  // namespace dp
