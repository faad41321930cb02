// RFC 6962 / RFC 9162 Merkle trees: known answers from the Certificate Transparency test
// leaves, a from-the-RFC reference implementation, and exhaustive proof properties.
#include "ledger/merkle.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

#include "common/encoding.h"

namespace warden {
namespace {

const char* kLeaves[] = {"", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                         "606162636465666768696a6b6c6d6e6f"};
const char* kRoots[] = {
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

MemoryTree ct_tree() {
  MemoryTree t;
  for (const char* leaf : kLeaves) t.append_data(*from_hex(leaf));
  return t;
}

std::vector<std::string> hexes(const std::vector<Digest>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) out.push_back(d.hex());
  return out;
}

// The RFC's definitions, transcribed literally: slow, obviously right.
Digest ref_mth(const std::vector<Digest>& leaves, size_t lo, size_t hi) {
  if (hi - lo == 1) return leaves[lo];
  size_t k = std::bit_floor(hi - lo - 1);
  return node_hash(ref_mth(leaves, lo, lo + k), ref_mth(leaves, lo + k, hi));
}
std::vector<Digest> ref_path(size_t m, const std::vector<Digest>& leaves, size_t lo, size_t hi) {
  if (hi - lo == 1) return {};
  size_t k = std::bit_floor(hi - lo - 1);
  std::vector<Digest> out;
  if (m < k) {
    out = ref_path(m, leaves, lo, lo + k);
    out.push_back(ref_mth(leaves, lo + k, hi));
  } else {
    out = ref_path(m - k, leaves, lo + k, hi);
    out.push_back(ref_mth(leaves, lo, lo + k));
  }
  return out;
}
std::vector<Digest> ref_subproof(size_t m, const std::vector<Digest>& leaves, size_t lo, size_t hi, bool b) {
  size_t n = hi - lo;
  if (m == n) return b ? std::vector<Digest>{} : std::vector<Digest>{ref_mth(leaves, lo, hi)};
  size_t k = std::bit_floor(n - 1);
  std::vector<Digest> out;
  if (m <= k) {
    out = ref_subproof(m, leaves, lo, lo + k, b);
    out.push_back(ref_mth(leaves, lo + k, hi));
  } else {
    out = ref_subproof(m - k, leaves, lo + k, hi, false);
    out.push_back(ref_mth(leaves, lo, lo + k));
  }
  return out;
}

Digest flip_bit(Digest d, size_t bit) {
  d.mutable_bytes()[bit / 8 % 32] ^= static_cast<uint8_t>(1u << (bit % 8));
  return d;
}

TEST(Merkle, RootsMatchTheCertificateTransparencyVectors) {
  MemoryTree t = ct_tree();
  for (uint64_t n = 0; n <= 8; ++n) EXPECT_EQ(t.root_at(n)->hex(), kRoots[n]) << "size " << n;
  EXPECT_EQ(t.root().hex(), kRoots[8]);
  EXPECT_EQ(leaf_hash("").hex(), kRoots[1]);
}

TEST(Merkle, InclusionProofKnownAnswers) {
  MemoryTree t = ct_tree();
  EXPECT_EQ(hexes(*inclusion_proof(t, 0, 8)),
            (std::vector<std::string>{"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                                      "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                                      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}));
  EXPECT_EQ(hexes(*inclusion_proof(t, 5, 8)),
            (std::vector<std::string>{"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                                      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                                      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}));
  EXPECT_TRUE(inclusion_proof(t, 0, 1)->empty());
  EXPECT_FALSE(inclusion_proof(t, 8, 8));
}

TEST(Merkle, ConsistencyProofKnownAnswers) {
  MemoryTree t = ct_tree();
  EXPECT_EQ(hexes(*consistency_proof(t, 2, 8)),
            (std::vector<std::string>{"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                                      "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}));
  EXPECT_EQ(hexes(*consistency_proof(t, 6, 8)),
            (std::vector<std::string>{"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                                      "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                                      "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}));
  EXPECT_EQ(hexes(*consistency_proof(t, 2, 5)),
            (std::vector<std::string>{"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                                      "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}));
  EXPECT_TRUE(consistency_proof(t, 8, 8)->empty());
  EXPECT_FALSE(consistency_proof(t, 0, 8));
  EXPECT_FALSE(consistency_proof(t, 5, 4));
}

TEST(Merkle, PostorderPositionsAreDenseAndIncreasingInAppendOrder) {
  // The LMDB store appends nodes with MDB_APPEND: positions must come out 0, 1, 2, ...
  MerkleHasher h;
  CompactRange range;
  uint64_t expected = 0;
  for (int i = 0; i < 1000; ++i) {
    range.append_to(h, leaf_hash(std::to_string(i)), [&](unsigned level, uint64_t index, const Digest&) {
      EXPECT_EQ(postorder_position(level, index), expected++);
    });
    EXPECT_EQ(expected, stored_node_count(range.size()));
  }
}

TEST(Merkle, MatchesTheReferenceImplementation) {
  std::vector<Digest> leaves;
  MemoryTree t;
  for (int i = 0; i < 70; ++i) {
    leaves.push_back(leaf_hash("leaf " + std::to_string(i)));
    t.append_leaf_hash(leaves.back());
  }
  for (size_t n = 1; n <= leaves.size(); ++n) {
    ASSERT_EQ(*t.root_at(n), ref_mth(leaves, 0, n)) << n;
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(*inclusion_proof(t, i, n), ref_path(i, leaves, 0, n)) << i << "/" << n;
    for (size_t m = 1; m <= n; ++m) {
      ASSERT_EQ(*consistency_proof(t, m, n), ref_subproof(m, leaves, 0, n, true)) << m << "/" << n;
    }
  }
}

TEST(Merkle, EveryProofUpTo200VerifiesAndEveryOneBitChangeFails) {
  constexpr uint64_t kMax = 200;
  MemoryTree t;
  for (uint64_t i = 0; i < kMax; ++i) t.append_data("data-" + std::to_string(i));
  std::vector<Digest> roots{MerkleHasher::empty_root()};
  for (uint64_t n = 1; n <= kMax; ++n) roots.push_back(*t.root_at(n));
  std::mt19937_64 rng(6962);

  for (uint64_t n = 1; n <= kMax; ++n) {
    for (uint64_t i = 0; i < n; ++i) {
      Digest leaf = *t.node(0, i);
      auto proof = *inclusion_proof(t, i, n);
      ASSERT_TRUE(verify_inclusion(leaf, i, n, proof, roots[n])) << i << "/" << n;
      size_t bit = rng() % 256;
      ASSERT_FALSE(verify_inclusion(flip_bit(leaf, bit), i, n, proof, roots[n]));
      ASSERT_FALSE(verify_inclusion(leaf, i, n, proof, flip_bit(roots[n], bit)));
      for (size_t k = 0; k < proof.size(); ++k) {
        auto bad = proof;
        bad[k] = flip_bit(bad[k], rng() % 256);
        ASSERT_FALSE(verify_inclusion(leaf, i, n, bad, roots[n])) << i << "/" << n << " element " << k;
      }
      if (n > 1) {
        ASSERT_FALSE(verify_inclusion(leaf, (i + 1) % n, n, proof, roots[n]));
      }
      // A proof only binds the size through the root: the same path may fit a larger size,
      // but never that size's root.
      if (n < kMax) {
        ASSERT_FALSE(verify_inclusion(leaf, i, n + 1, proof, roots[n + 1]));
      }
      if (!proof.empty()) {
        auto shorter = proof;
        shorter.pop_back();
        ASSERT_FALSE(verify_inclusion(leaf, i, n, shorter, roots[n]));
      }
      auto longer = proof;
      longer.push_back(roots[n]);
      ASSERT_FALSE(verify_inclusion(leaf, i, n, longer, roots[n]));
    }
    for (uint64_t m = 1; m <= n; ++m) {
      auto proof = *consistency_proof(t, m, n);
      ASSERT_TRUE(verify_consistency(m, n, roots[m], roots[n], proof)) << m << "/" << n;
      if (m == n) continue;
      size_t bit = rng() % 256;
      ASSERT_FALSE(verify_consistency(m, n, flip_bit(roots[m], bit), roots[n], proof));
      ASSERT_FALSE(verify_consistency(m, n, roots[m], flip_bit(roots[n], bit), proof));
      for (size_t k = 0; k < proof.size(); ++k) {
        auto bad = proof;
        bad[k] = flip_bit(bad[k], rng() % 256);
        ASSERT_FALSE(verify_consistency(m, n, roots[m], roots[n], bad)) << m << "/" << n << " element " << k;
      }
      ASSERT_FALSE(verify_consistency(m, n, roots[m], roots[n], {}));
      if (m + 1 < n) {
        ASSERT_FALSE(verify_consistency(m + 1, n, roots[m + 1], roots[n], proof));
      }
    }
  }
}

TEST(Merkle, CompactRangeReloadsFromStoredNodes) {
  MemoryTree t;
  for (int i = 0; i < 77; ++i) t.append_data(std::to_string(i));
  for (uint64_t n : {0, 1, 2, 3, 64, 77}) {
    auto range = CompactRange::load(t, n);
    ASSERT_TRUE(range);
    MerkleHasher h;
    EXPECT_EQ(range->root(h), *t.root_at(n));
    EXPECT_EQ(range->nodes().size(), static_cast<size_t>(std::popcount(n)));
  }
}

}  // namespace
}  // namespace warden
