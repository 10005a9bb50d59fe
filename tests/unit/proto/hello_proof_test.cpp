// The hello proof's wire format: daemons, agents and clients of one step must
// compute the same 32 bytes, whatever library does the hashing. The expected
// proofs were computed by the earlier, hand-written SHA-256 and checked with
// Python's hmac module; a change here breaks every mixed-version step.
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
            "91a970dbd11fb8e9aef68dfbe511811ee205890721d67f419588f669b0053525");
  EXPECT_EQ(hex(rdv::hello_proof(kHexSecret, seq, proto::ROLE_RANK, 3, 4,
                                 "gpu-node-017.cluster.example")),
            "8d469f3a724de5a4e383fa8fa49d67fcdd885c5e51e9bd169d0335bc634c5a59");
  // A one-byte key, and one longer than SHA-256's block (hashed first).
  EXPECT_EQ(hex(rdv::hello_proof("k", seq, proto::ROLE_RANK, 2147483647, 131072, "h")),
            "bab3cbbe1bc4f64bb5fea624e29f1653d9b377a63db4b9a57324df63b437b97d");
  EXPECT_EQ(hex(rdv::hello_proof(std::string(100, 'z') + kHexSecret, seq, proto::ROLE_RANK, 131071,
                                 131072, "n9999")),
            "6931f4dff9fb3d9890544a9d9d355293355cd7aad021706c969124f917397434");
}

TEST(HelloProof, AgentAndNodeProofsMatchTheWireFormat) {
  const std::string seq = sequence_nonce();
  const std::string zeros(32, '\0');
  EXPECT_EQ(hex(rdv::hello_proof(kHexSecret, zeros, proto::ROLE_AGENT, -1, 0, "")),
            "643fc86adb611dc8716cfc63e7481f5a5ccf2431cf24f0392b4a4aa970a28e21");
  const std::vector<int32_t> four{8, 9, 10, 11};
  EXPECT_EQ(
      hex(rdv::hello_proof(kHexSecret, seq, proto::ROLE_NODE, -1, 131072, "gpu-node-017", four)),
      "1741ca09d0400fc6c4b545b05e6ac143bba7ad331094177de59fbf5b09bfb065");
  const std::vector<int32_t> odd{-1, 0, 2147483647};
  EXPECT_EQ(hex(rdv::hello_proof(std::string(64, 'b'), zeros, proto::ROLE_NODE, 0, 0, "n", odd)),
            "e7924d74b9fc5a816ade9d3e06e782307e0ba17a75482ad98266cfc7553f2d8e");
  // No ranks: the same bytes as the proof without a rank list.
  const std::string none = rdv::hello_proof(kHexSecret, std::string(32, 'N'), proto::ROLE_NODE, -1,
                                            2, "n1", std::vector<int32_t>{});
  EXPECT_EQ(hex(none), "eb091b274e2aac471df569085cedafefd8641fc67e28deb8f934067d88133aed");
  EXPECT_EQ(none,
            rdv::hello_proof(kHexSecret, std::string(32, 'N'), proto::ROLE_NODE, -1, 2, "n1"));
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
