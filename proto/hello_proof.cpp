#include "hello_proof.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cstring>

namespace dp::rdv {
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

class Sha256 {
 public:
  void update(std::string_view data) noexcept {
    for (char ch : data) {
      block_[fill_++] = static_cast<unsigned char>(ch);
      if (fill_ == 64) {
        compress();
        fill_ = 0;
      }
    }
    bits_ += static_cast<uint64_t>(data.size()) * 8;
  }

  Digest finish() noexcept {
    const uint64_t bits = bits_;
    block_[fill_++] = 0x80;
    if (fill_ > 56) {
      std::fill(block_ + fill_, block_ + 64, 0);
      compress();
      fill_ = 0;
    }
    std::fill(block_ + fill_, block_ + 56, 0);
    for (int i = 0; i < 8; ++i) block_[56 + i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    compress();
    Digest d{};
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 4; ++j) d[4 * i + j] = static_cast<unsigned char>(h_[i] >> (24 - 8 * j));
    }
    return d;
  }

 private:
  void compress() noexcept {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      w[i] = (uint32_t{block_[4 * i]} << 24) | (uint32_t{block_[4 * i + 1]} << 16) |
             (uint32_t{block_[4 * i + 2]} << 8) | uint32_t{block_[4 * i + 3]};
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 =
          h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }

  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  size_t fill_ = 0;
  uint64_t bits_ = 0;
};

std::string_view view(const Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i)));
}

}  // namespace

std::string random_bytes(size_t n) {
  std::string b(n, '\0');
  size_t got = 0;
  while (got < b.size()) {
    const ssize_t r = getrandom(b.data() + got, b.size() - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
  }
  return b;
}

std::string random_nonce() { return random_bytes(kNonceBytes); }

Digest sha256(std::string_view data) noexcept {
  Sha256 s;
  s.update(data);
  return s.finish();
}

Digest hmac_sha256(std::string_view key, std::string_view message) noexcept {
  unsigned char k[64] = {};
  if (key.size() > 64) {
    const Digest kd = sha256(key);
    std::memcpy(k, kd.data(), kd.size());
  } else {
    std::memcpy(k, key.data(), key.size());
  }
  char ipad[64], opad[64];
  for (int i = 0; i < 64; ++i) {
    ipad[i] = static_cast<char>(k[i] ^ 0x36);
    opad[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.update({ipad, 64});
  inner.update(message);
  const Digest ih = inner.finish();
  Sha256 outer;
  outer.update({opad, 64});
  outer.update(view(ih));
  return outer.finish();
}

std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host) {
  return hello_proof(secret, nonce, role, rank, world_size, host, {});
}

std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host,
                        std::span<const int32_t> node_ranks) {
  std::string m = "slurm-dp rendezvous hello v2";
  m.push_back('\0');
  m.append(nonce);
  put_u32(m, static_cast<uint32_t>(role));
  put_u32(m, static_cast<uint32_t>(rank));
  put_u32(m, static_cast<uint32_t>(world_size));
  m.append(host);
  for (int32_t r : node_ranks) put_u32(m, static_cast<uint32_t>(r));
  return std::string(view(hmac_sha256(secret, m)));
}

bool equal_constant_time(std::string_view a, std::string_view b) noexcept {
  // Always walk the longer length so the time reveals neither content nor prefix.
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

}  // namespace dp::rdv
