#include "hello_proof.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

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

// One step has one secret, and HMAC() looks up its algorithms on every call
// (most of its cost: at 16 384 node hellos that was a tenth of the daemon's
// start-up). So each thread keeps a context keyed with the last key and
// copies it per message.
class KeyedHmac {
 public:
  ~KeyedHmac() {
    reset();
    EVP_MAC_free(mac_);
  }
  // A fresh context holding `key`, or null when libcrypto fails.
  EVP_MAC_CTX* copy_for(std::string_view key) {
    if (!keyed_ || key != key_) {
      reset();
      if (!mac_) mac_ = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
      keyed_ = mac_ ? EVP_MAC_CTX_new(mac_) : nullptr;
      char digest[] = "SHA256";
      const OSSL_PARAM params[] = {
          OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
          OSSL_PARAM_construct_end()};
      if (keyed_ && EVP_MAC_init(keyed_, bytes(key), key.size(), params) != 1) reset();
      if (!keyed_) return nullptr;
      key_.assign(key);
    }
    return EVP_MAC_CTX_dup(keyed_);
  }

 private:
  void reset() {
    EVP_MAC_CTX_free(keyed_);
    keyed_ = nullptr;
    OPENSSL_cleanse(key_.data(), key_.size());
    key_.clear();
  }
  EVP_MAC* mac_ = nullptr;  // fetched once per thread, kept for its life
  EVP_MAC_CTX* keyed_ = nullptr;
  std::string key_;
};

}  // namespace

Result<std::string> random_nonce() { return random_bytes(kNonceBytes); }

std::string hmac_sha256(std::string_view key, std::string_view message) {
  thread_local KeyedHmac keyed;
  EVP_MAC_CTX* ctx = keyed.copy_for(key);
  if (!ctx) return {};
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t len = 0;
  const bool ok = EVP_MAC_update(ctx, bytes(message), message.size()) == 1 &&
                  EVP_MAC_final(ctx, mac, &len, sizeof mac) == 1 && len == kProofBytes;
  EVP_MAC_CTX_free(ctx);
  return ok ? std::string(reinterpret_cast<const char*>(mac), len) : std::string();
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
