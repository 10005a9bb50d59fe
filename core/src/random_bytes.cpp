#include "dp/random_bytes.hpp"
#include "dp/sys_error.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace dp {
namespace {

// A blocking getrandom is interrupted by signals only while the kernel's pool
// is not ready yet (early at boot); this many in a row is a signal storm.
constexpr int kMaxInterrupts = 16;

std::string cause(int e) {
  std::string why = dp::errno_text(e);
  if (e == ENOSYS) why += " (ENOSYS: a kernel older than 3.17, or a seccomp filter that hides it)";
  if (e == EPERM) why += " (EPERM: a seccomp filter forbids it)";
  return why;
}

Error failed(const std::string& why) {
  return make_error(Errc::unavailable, "cannot read random bytes from the kernel: getrandom: " +
                                           why + "; run where getrandom(2) is allowed");
}

}  // namespace

Result<std::string> random_bytes(size_t n, RandomSource source) {
  if (source == nullptr) source = &::getrandom;
  std::string out(n, '\0');
  size_t got = 0;
  int interrupts = 0;
  while (got < n) {
    const ssize_t r = source(out.data() + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      interrupts = 0;
      continue;
    }
    if (r == 0) return failed("returned no bytes");
    const int e = errno;
    if (e != EINTR) return failed(cause(e));
    if (++interrupts > kMaxInterrupts)
      return failed("interrupted by signals " + std::to_string(interrupts) + " times in a row");
  }
  return out;
}

}  // namespace dp
