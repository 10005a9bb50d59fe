#include "dp/torchstore/reply.hpp"

#include "wire.hpp"

namespace dp::torchstore {

std::string encode_value(std::string_view value) {
  std::string out;
  wire::put_blob(out, value);
  return out;
}

std::string encode_values(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) wire::put_blob(out, v);
  return out;
}

std::string encode_int64(int64_t n) {
  std::string out;
  wire::put<int64_t>(out, n);
  return out;
}

std::string encode_check(CheckAnswer a) { return std::string(1, static_cast<char>(a)); }

std::string encode_wait(WaitAnswer a) { return std::string(1, static_cast<char>(a)); }

std::string encode_ping(uint32_t nonce) {
  std::string out;
  wire::put<uint32_t>(out, nonce);
  return out;
}

std::string encode_queue_pop(int64_t length_before, const std::optional<std::string>& popped) {
  std::string out = encode_int64(length_before);
  if (popped) wire::put_blob(out, *popped);
  return out;
}

std::string encode_watch_registered() {
  return std::string(1, static_cast<char>(WatchEvent::callback_registered));
}

std::string encode_watch_event(WatchEvent e, std::string_view key, std::string_view old_value,
                               std::string_view new_value) {
  std::string out(1, static_cast<char>(e));
  wire::put_blob(out, key);
  wire::put_blob(out, old_value);
  wire::put_blob(out, new_value);
  return out;
}

}  // namespace dp::torchstore
