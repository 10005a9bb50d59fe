// Authentication of a rendezvous hello without sending the secret: the
// daemon sends a fresh nonce on accept; the client answers with
// HMAC-SHA256(secret, context || nonce || identity), where identity binds the
// role, rank, world size and host it claims; the nonce, the host and a node's
// rank list each carry their length first (protocol 3), so the input is
// unambiguous. A captured hello is useless on
// another connection (another nonce) and reveals nothing of the secret.
// The MAC is OpenSSL's libcrypto: the daemon, the node agent and libdp link
// it; the plugin does not (it never proves or checks a hello).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "dp/result.hpp"

namespace dp::rdv {

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // one HMAC-SHA-256

// A fresh challenge for one connection (kNonceBytes from dp::random_bytes):
// the daemon and the node agent both issue them.
Result<std::string> random_nonce();

// kProofBytes, or empty when libcrypto fails (out of memory, a broken
// provider configuration): an empty proof never matches (proof_matches).
std::string hmac_sha256(std::string_view key, std::string_view message);

// The proof a hello carries. role is the wire value of proto::Role.
std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host);
// A node agent's proof (role ROLE_NODE) also covers the ranks it speaks for,
// their count then each 4 bytes big-endian after host, so a captured hello
// cannot claim others.
std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host, std::span<const int32_t> node_ranks);

// Whether a received proof is the expected one, in a time that does not
// depend on where they differ. Nothing matches an expected proof that could
// not be computed.
bool proof_matches(std::string_view received, std::string_view expected) noexcept;

}  // namespace dp::rdv
