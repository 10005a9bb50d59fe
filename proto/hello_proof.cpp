#include "hello_proof.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <climits>

#include "dp/random_bytes.hpp"

namespace dp::rdv {
namespace {

void put_u32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i)));
}

// libcrypto wants a real pointer even for zero bytes.
const unsigned char* bytes(std::string_view s) {
  static const unsigned char kNone = 0;
  return s.empty() ? &kNone : reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

Result<std::string> random_nonce() { return random_bytes(kNonceBytes); }

std::string hmac_sha256(std::string_view key, std::string_view message) {
  if (key.size() > INT_MAX) return {};
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), bytes(key), static_cast<int>(key.size()), bytes(message), message.size(),
           mac, &len) == nullptr ||
      len != kProofBytes)
    return {};
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host) {
  return hello_proof(secret, nonce, role, rank, world_size, host, {});
}

std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host,
                        std::span<const int32_t> node_ranks) {
  // Every variable-length field has its length before it, so no two
  // different hellos give one message (v2 ran the host into the rank list).
  std::string m = "slurm-dp rendezvous hello v3";
  m.push_back('\0');
  put_u32(m, static_cast<uint32_t>(nonce.size()));
  m.append(nonce);
  put_u32(m, static_cast<uint32_t>(role));
  put_u32(m, static_cast<uint32_t>(rank));
  put_u32(m, static_cast<uint32_t>(world_size));
  put_u32(m, static_cast<uint32_t>(host.size()));
  m.append(host);
  put_u32(m, static_cast<uint32_t>(node_ranks.size()));
  for (int32_t r : node_ranks) put_u32(m, static_cast<uint32_t>(r));
  return hmac_sha256(secret, m);
}

bool proof_matches(std::string_view received, std::string_view expected) noexcept {
  // The lengths are no secret (every proof has kProofBytes); the bytes are.
  return expected.size() == kProofBytes && received.size() == expected.size() &&
         CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

}  // namespace dp::rdv
