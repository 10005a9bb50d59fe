// The protocol's integer and blob framing, shared by the request and reply
// codecs (not installed): host byte order, as PyTorch's client and server
// copy the integers' bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dp::torchstore::wire {

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// A uint64 length, then the bytes.
inline void put_blob(std::string& out, std::string_view blob) {
  put<uint64_t>(out, blob.size());
  out.append(blob);
}

template <class T>
T get(std::string_view bytes) {
  T value;
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

}  // namespace dp::torchstore::wire
