// The hello proof's wire format (protocol 3: the nonce, host and rank list
// length-prefixed): daemons, agents and clients of one step must compute the
// same 32 bytes, whatever library does the hashing. The expected proofs were
// computed independently with Python's hmac module from the layout in
// hello_proof.cpp; a change here breaks every mixed-version step.
#include "hello_proof.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dp/hex.hpp"
#include "dp/proto/rendezvous.pb.h"

namespace dp {
namespace {

// Any contiguous bytes (a proof, a MAC) as lower-case hex.
template <class Bytes>
std::string hex(const Bytes& bytes) {
  return to_hex({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()});
}

const std::string kHexSecret = "3f7a9c01d2e4b6a8c0e2f4a6b8d0e2f41357902468ace0bdf13579bdf02468ac";

std::string sequence_nonce() {
  std::string n;
  for (int i = 0; i < 32; ++i) n.push_back(static_cast<char>(i * 7 + 3));
  return n;
}

TEST(HelloProof, RankProofsMatchTheWireFormat) {
  const std::string seq = sequence_nonce();
  EXPECT_EQ(hex(rdv::hello_proof(std::string(64, 'a'), std::string(32, 'N'), proto::ROLE_RANK, 0, 4,
                                 "n1")),
            "b0145bcb7964758af2732c84817aeaf912f30e1ef44d8f2918f983246f3daf99");
  EXPECT_EQ(hex(rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 3, 4,
                                 "gpu-node-017.cluster.example")),
            "1d1fd57a063c2caf307c313fdd97699186fd7669dd29690e90e2e37b72d07444");
  // A one-byte key, and one longer than SHA-256's block (hashed first).
  EXPECT_EQ(hex(rdv::hello_proof("k", seq, proto::ROLE_RANK, 2147483647, 131072, "h")),
            "b83ffd3b3995a802ade604a9235db6d891f3ef29ca9e69d3d4872819460afd8a");
  EXPECT_EQ(hex(rdv::hello_proof(std::string(100, 'z') + kHexSecret, seq, proto::ROLE_RANK, 131071,
                                 131072, "n9999")),
            "fed397abc4444339fdd66437886a8df877d887dc12480bba06b51a3dc58c2791");
}

TEST(HelloProof, AgentAndNodeProofsMatchTheWireFormat) {
  const std::string seq = sequence_nonce();
  const std::string zeros(32, '\0');
  EXPECT_EQ(hex(rdv::hello_proof(kHexSecret, zeros, proto::ROLE_AGENT, -1, 0, "")),
            "4568aaf3a9bd2552ddff441f770e7edf741f4aa4af1e37b1bf1fe939d46ee340");
  const std::vector<int32_t> four{8, 9, 10, 11};
  EXPECT_EQ(
      hex(rdv::hello_proof(kHexSecret, seq, proto::ROLE_NODE, -1, 131072, "gpu-node-017", four)),
      "626d6f532279e9c7fe7ab8d6c3484b60881b983dfed2241dc0a5408779d3d1f9");
  const std::vector<int32_t> odd{-1, 0, 2147483647};
  EXPECT_EQ(hex(rdv::hello_proof(std::string(64, 'b'), zeros, proto::ROLE_NODE, 0, 0, "n", odd)),
            "1a24658242e810a4e482ba0872b69563012ead714f8c5dff25dc95cf9828cea5");
  // No ranks: the same bytes as the proof without a rank list.
  const std::string none = rdv::hello_proof(kHexSecret, std::string(32, 'N'), proto::ROLE_NODE, -1,
                                            2, "n1", std::vector<int32_t>{});
  EXPECT_EQ(hex(none), "eff98bb8ae1e27b496894e0783b33e4063c5fa50c23dff81496e39f97109493c");
  EXPECT_EQ(none,
            rdv::hello_proof(kHexSecret, std::string(32, 'N'), proto::ROLE_NODE, -1, 2, "n1"));
}

TEST(HelloProof, TheHostCannotRunIntoTheRankList) {
  // Unprefixed, host "n1" with rank 8 and host "n1\0\0\0\x08" with none were one message.
  const std::vector<int32_t> eight{8};
  EXPECT_NE(rdv::hello_proof(kHexSecret, sequence_nonce(), proto::ROLE_NODE, -1, 2, "n1", eight),
            rdv::hello_proof(kHexSecret, sequence_nonce(), proto::ROLE_NODE, -1, 2,
                             std::string("n1\0\0\0\x08", 6), std::vector<int32_t>{}));
}

TEST(HelloProof, EveryFieldChangesTheProof) {
  const std::string seq = sequence_nonce();
  const std::string base = rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 3, 4, "n1");
  EXPECT_EQ(base.size(), 32u);
  std::string other_nonce = seq;
  other_nonce[31] ^= 1;
  std::string other_secret = kHexSecret;
  other_secret[0] = '4';
  EXPECT_NE(base, rdv::hello_proof(other_secret, seq, proto::ROLE_RANK, 3, 4, "n1"));
  EXPECT_NE(base, rdv::hello_proof(kHexSecret, other_nonce, proto::ROLE_RANK, 3, 4, "n1"));
  EXPECT_NE(base, rdv::hello_proof(kHexSecret, seq, proto::ROLE_AGENT, 3, 4, "n1"));
  EXPECT_NE(base, rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 2, 4, "n1"));
  EXPECT_NE(base, rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 3, 5, "n1"));
  EXPECT_NE(base, rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 3, 4, "n2"));
}

TEST(HmacSha256, Rfc4231Vectors) {
  EXPECT_EQ(hex(rdv::hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex(rdv::hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex(rdv::hmac_sha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  std::string k4;
  for (int i = 1; i <= 25; ++i) k4 += static_cast<char>(i);
  EXPECT_EQ(hex(rdv::hmac_sha256(k4, std::string(50, '\xcd'))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Test case 5 is a truncated MAC: its first 128 bits.
  EXPECT_EQ(hex(rdv::hmac_sha256(std::string(20, '\x0c'), "Test With Truncation")).substr(0, 32),
            "a3b6167473100ee06e0c796c2955552b");
  EXPECT_EQ(hex(rdv::hmac_sha256(std::string(131, '\xaa'),
                                 "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(
      hex(rdv::hmac_sha256(
          std::string(131, '\xaa'),
          "This is a test using a larger than block-size key and a larger than block-size data. "
          "The key needs to be hashed before being used by the HMAC algorithm.")),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
  // An empty key and message (not in the RFC; Python's hmac agrees).
  EXPECT_EQ(hex(rdv::hmac_sha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(ProofMatches, OnlyAWholeEqualProof) {
  const std::string proof =
      rdv::hello_proof(kHexSecret, sequence_nonce(), proto::ROLE_RANK, 1, 2, "h");
  ASSERT_EQ(proof.size(), rdv::kProofBytes);
  EXPECT_TRUE(rdv::proof_matches(proof, proof));
  std::string last_bit = proof;
  last_bit[31] ^= 1;
  EXPECT_FALSE(rdv::proof_matches(last_bit, proof));
  EXPECT_FALSE(rdv::proof_matches(proof.substr(0, 31), proof));
  EXPECT_FALSE(rdv::proof_matches(proof + "x", proof));
  EXPECT_FALSE(rdv::proof_matches("", proof));
  // A proof that could not be computed (empty) matches nothing, itself included.
  EXPECT_FALSE(rdv::proof_matches("", ""));
  EXPECT_FALSE(rdv::proof_matches("abc", "abc"));
}

}  // namespace
}  // namespace dp
