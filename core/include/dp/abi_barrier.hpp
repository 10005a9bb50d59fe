// The one way an object made in C++ leaves through a C ABI (the GPU modules'
// entry points): released to the caller, or nullptr with the error; no
// exception crosses.
#pragma once

#include <exception>
#include <string>

#include "dp/result.hpp"

namespace dp {

// make() returns Result<std::unique_ptr<T>>; `what` prefixes an exception's text.
template <class Make>
auto released_across_abi(const char* what, Error* error, Make&& make) noexcept
    -> decltype(make()->release()) {
  try {
    auto made = make();
    if (made) return made->release();
    *error = made.error();
  } catch (const std::exception& e) {
    *error = make_error(Errc::internal, std::string(what) + ": " + e.what());
  } catch (...) {
    *error = make_error(Errc::internal, std::string(what) + ": unknown exception");
  }
  return nullptr;
}

}  // namespace dp
