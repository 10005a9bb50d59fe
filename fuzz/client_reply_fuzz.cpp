// libFuzzer target: the rendezvous client's reply parsing (ReplyReader),
// which runs in slurmstepd as root against whatever answers on the address
// it was given. The input is the daemon's byte stream cut into chunks; the
// reader must never crash, allocate past its frame limit, or hand out a
// reply with an unknown code or unprintable text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "reply_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte picks the limit: the plugin's 64 KiB or a hello's 4 KiB.
  const uint32_t limit = (data[0] & 1) ? 64 * 1024 : 4096;
  dp::rdv::ReplyReader reader(limit);
  size_t pos = 1;
  while (pos < size) {
    const size_t chunk = std::min<size_t>(size - pos, 1 + data[pos - 1] % 97);
    auto fed = reader.feed(reinterpret_cast<const char*>(data + pos), chunk);
    pos += chunk;
    if (!fed) break;
    for (;;) {
      auto r = reader.next();
      if (!r) return 0;  // the stream is unusable; the client closes the connection
      if (!*r) break;
      const dp::proto::Response& resp = **r;
      if (!dp::proto::Code_IsValid(resp.code())) std::abort();
      if (resp.message().size() > 1027) std::abort();
      for (char c : resp.message()) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
          std::abort();
      }
    }
  }
  return 0;
}
