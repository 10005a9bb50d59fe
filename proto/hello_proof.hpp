// Authentication of a rendezvous hello without sending the secret: the
// daemon sends a fresh nonce on accept; the client answers with
// HMAC-SHA256(secret, context || nonce || identity), where identity binds the
// role, rank, world size and host it claims. A captured hello is useless on
// another connection (another nonce) and reveals nothing of the secret.
// SHA-256 and HMAC are written here (FIPS 180-4, RFC 2104) so the plugin,
// which links this statically into slurmstepd, pulls in no crypto library.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dp::rdv {

inline constexpr size_t kNonceBytes = 32;
using Digest = std::array<unsigned char, 32>;

// n bytes from getrandom (retried until all arrive): nonces and the node
// agent's unguessable socket names.
std::string random_bytes(size_t n);

// A fresh challenge for one connection (kNonceBytes from getrandom): the
// daemon and the node agent both issue them.
std::string random_nonce();

Digest sha256(std::string_view data) noexcept;
Digest hmac_sha256(std::string_view key, std::string_view message) noexcept;

// The proof a hello carries (32 bytes). role is the wire value of proto::Role.
std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host);
// A node agent's proof (role ROLE_NODE) also covers the ranks it speaks for,
// each 4 bytes big-endian after host, so a captured hello cannot claim others.
std::string hello_proof(std::string_view secret, std::string_view nonce, int role, int rank,
                        int world_size, std::string_view host, std::span<const int32_t> node_ranks);

// Constant-time comparison: the time taken does not depend on where a and b differ.
bool equal_constant_time(std::string_view a, std::string_view b) noexcept;

}  // namespace dp::rdv
