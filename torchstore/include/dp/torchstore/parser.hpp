// The server's side of one connection: bytes in, split anywhere, typed
// requests out. Every length is capped before a byte of it is held, so a
// client can make the parser hold at most limits.buffered_bytes of input and
// one request of at most limits.request_bytes; garbage, an unknown opcode, a
// v2 connection that does not open with VALIDATE and its magic, or a length
// over its cap is an error naming the opcode and the field. The error is
// final: the caller logs it and closes the connection, as PyTorch's own
// server closes on each of these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dp/result.hpp"
#include "dp/store_limits.hpp"
#include "dp/torchstore/opcodes.hpp"
#include "dp/torchstore/request.hpp"

namespace dp::torchstore {

struct Limits {
  // The defaults are the step store's (dp/store_limits.hpp): at least the
  // caps of PyTorch's libuv server (2.4+'s default), so they refuse nothing
  // that server accepts.
  size_t key_bytes = kStoreKeyBytes;          // one key
  size_t value_bytes = kStoreValueBytes;      // one value
  size_t keys = 128 * 1024;                   // keys of one CHECK, WAIT, MULTI_GET, MULTI_SET
  size_t request_bytes = kStoreRequestBytes;  // one whole request
  size_t buffered_bytes = kStoreRequestBytes + 65536;  // input held, not yet parsed
};

class RequestParser {
 public:
  explicit RequestParser(Limits limits = {}) : limits_(limits) {}

  // Takes bytes read from the connection; an error when they would make it
  // hold more than limits.buffered_bytes (call next() until it needs more
  // before feeding again).
  Result<void> feed(std::string_view bytes);
  // The next whole request; nullopt while one is incomplete.
  Result<std::optional<Request>> next();

  // Known once the first bytes have been seen.
  std::optional<Dialect> dialect() const { return dialect_; }
  // Input bytes held and not yet taken into a request.
  size_t buffered() const { return buf_.size() - pos_; }
  // A request has begun and is not whole yet (a client that closes now left
  // one half sent).
  bool mid_request() const { return pending_.has_value() || buffered() > 0; }

 private:
  struct Pending {
    Request req;
    uint8_t byte = 0;  // the opcode as sent
    size_t field = 0;  // fields of the request read so far
    size_t bytes = 1;  // request bytes read so far, the opcode included
    bool have_count = false;
    uint64_t count = 0;     // keys of a CHECK, WAIT, MULTI_GET, MULTI_SET
    bool pair_key = false;  // MULTI_SET: the current pair's key is read
  };

  Result<bool> detect();
  Result<bool> start_request();
  Result<bool> read_field();
  Result<bool> read_list(bool pairs);
  // key: the key a value belongs to, named when it is refused.
  Result<std::optional<std::string>> take_blob(const char* field, size_t cap,
                                               const std::string* key = nullptr);
  template <class T>
  std::optional<T> take_fixed();
  Error fail(Errc code, const std::string& what);
  std::string_view unread() const { return std::string_view(buf_).substr(pos_); }

  Limits limits_;
  std::string buf_;
  size_t pos_ = 0;
  std::optional<Dialect> dialect_;
  bool opened_ = false;  // the connection's first request has begun
  std::optional<Pending> pending_;
  std::optional<Error> failed_;
};

}  // namespace dp::torchstore
