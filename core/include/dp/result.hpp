// Errors as values: every fallible call in slurm-dp returns dp::Result<T>.
// (std::expected is C++23; this is the small subset we need.)
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dp {

enum class Errc {
  ok = 0,
  invalid_argument,  // bad option, setting or environment value
  timeout,           // a call or connect exceeded its deadline
  aborted,           // the job was aborted (a rank died or called abort)
  unauthorized,      // wrong job secret
  protocol,          // malformed frame, wrong version, unknown operation
  limit,             // a size or count limit was exceeded
  not_found,         // key absent (non-blocking get, delete)
  conflict,          // compare-and-set mismatch, duplicate rank
  connection,        // connect/read/write failure
  unavailable,       // backend or device not usable here (e.g. no CUDA device)
  internal,
};

const char* errc_name(Errc c) noexcept;

// A place in slurm-dp's sources; file names are static strings.
struct SourcePlace {
  const char* file;
  int line;
};

struct Error {
  Errc code = Errc::internal;
  std::string message;  // one line a user can act on: what failed, where, what to do
  // Where it was made, then each DP_TRY that passed it on (filled when built
  // as C++20). describe() shows it with DP_DEBUG=1.
  std::vector<SourcePlace> trail = {};
};

// DP_DEBUG is set and not empty or 0: the one reading of that variable.
bool debug_enabled();

// The message, and with debug_enabled() one "  -> file:line" line per place of
// the trail, innermost first.
std::string describe(const Error& e);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error err) : v_(std::move(err)) {}  // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error err) : err_(std::move(err)), ok_(false) {}  // NOLINT
  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

namespace detail {
// -fmacro-prefix-map makes source paths relative to the tree, but ccache's
// base_dir hands a Makefile build paths relative to each object's folder
// ("../../../core/x.cpp"), which no fixed map covers: the "../" go here.
constexpr const char* tree_path(const char* file) noexcept {
  while (file[0] == '.' && file[1] == '.' && file[2] == '/') file += 3;
  return file;
}
}  // namespace detail

// The caller's file and line: __builtin_FILE/LINE, which GCC and Clang
// evaluate at the call site like std::source_location, also where
// <source_location> is unusable (Clang 14 with libstdc++ 12, the fuzzers' compiler).
inline Error make_error(Errc code, std::string message, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  return Error{code, std::move(message), {{detail::tree_path(file), line}}};
}

namespace detail {
inline Error passed_on(Error e, const char* file, int line) {
  e.trail.push_back({tree_path(file), line});
  return e;
}
}  // namespace detail

// `e` told in other words (`message`, which usually quotes e.message): its
// code and its trail kept, this place added, as DP_TRY adds one; a wrapped
// error still says where it began.
inline Error wrap_error(const Error& e, std::string message, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  Error w = detail::passed_on(e, file, line);
  w.message = std::move(message);
  return w;
}

}  // namespace dp

// Propagate an error from a Result-returning expression, adding this place
// to its trail.
#define DP_TRY(expr)                                                                            \
  do {                                                                                          \
    auto&& dp_try_r_ = (expr);                                                                  \
    if (!dp_try_r_.ok()) return ::dp::detail::passed_on(dp_try_r_.error(), __FILE__, __LINE__); \
  } while (0)
