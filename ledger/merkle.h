// RFC 6962 / RFC 9162 Merkle trees: leaf and node hashing, proof generation from stored
// perfect-subtree nodes, and proof verification exactly as RFC 9162 sections 2.1.3.2 and
// 2.1.4.2 describe.
//
// Storage layout: every perfect subtree (level L, index i) covering leaves
// [i*2^L, (i+1)*2^L) is written once, when its last leaf arrives, at its post-order
// position. Appending leaves in order therefore produces nodes in increasing position,
// so an LMDB store can use MDB_APPEND, and any subtree root is a single read.
//
// Nothing here is durable or shared: the free functions are pure, and MerkleHasher,
// CompactRange and MemoryTree are values that own their state with no lock — not
// thread-safe, one per thread. Proof functions borrow the NodeReader for the call only.
// Errors: invalid_argument means the caller asked for an impossible range or size (a bug or
// bad input, not worth retrying); any other error is the NodeReader's, passed through
// unchanged (for MemoryTree, not_found for a node it does not hold). The verify_* functions
// return false for any proof that does not check; they never say why.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <span>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"

namespace warden {

// Hashes with a reusable context: hot loops own one instead of paying for a fresh
// OpenSSL context per node. Owns one Sha256, so one per thread.
class MerkleHasher {
 public:
  Digest leaf(std::string_view data);                    // SHA-256(0x00 || data)
  Digest node(const Digest& left, const Digest& right);  // SHA-256(0x01 || left || right)
  static Digest empty_root();                            // SHA-256("")

 private:
  Sha256 sha_;
};

Digest leaf_hash(std::string_view data);
Digest node_hash(const Digest& left, const Digest& right);

// Post-order position of perfect subtree (level, index) among all perfect subtrees.
uint64_t postorder_position(unsigned level, uint64_t index);
// Number of stored perfect-subtree nodes for a tree of `size` leaves.
uint64_t stored_node_count(uint64_t size);

// Where proofs read their nodes from: the LMDB store or memory.
class NodeReader {
 public:
  virtual ~NodeReader() = default;
  // Root of the perfect subtree (level, index); it must be complete in the store.
  virtual Result<Digest> node(unsigned level, uint64_t index) = 0;
};

// Root of leaves [lo, hi) where lo is aligned as in the RFC's recursion; O(log n) reads.
Result<Digest> range_root(NodeReader& reader, MerkleHasher& hasher, uint64_t lo, uint64_t hi);
// RFC 9162 2.1.3.1 PATH(index, D[0:size]), in RFC order (leaf level first). O(log n) reads.
Result<std::vector<Digest>> inclusion_proof(NodeReader& reader, uint64_t index, uint64_t size);
// RFC 9162 2.1.4.1 PROOF(m, D[0:n]) for 0 < m <= n. O(log n) reads.
Result<std::vector<Digest>> consistency_proof(NodeReader& reader, uint64_t m, uint64_t n);

bool verify_inclusion(const Digest& leaf, uint64_t index, uint64_t size, std::span<const Digest> proof,
                      const Digest& root);
bool verify_consistency(uint64_t size1, uint64_t size2, const Digest& root1, const Digest& root2,
                        std::span<const Digest> proof);

// The right edge of a growing tree: the roots of the perfect subtrees that the binary
// decomposition of `size` names, largest first. Appending is O(log n) hashing worst case,
// O(1) amortized, and reports each newly completed perfect subtree for storage.
// append*() cannot fail: storing what the sink is handed is the caller's job, and a range
// whose sink failed no longer matches the store (reload it with load()).
class CompactRange {
 public:
  using NodeSink = std::function<void(unsigned level, uint64_t index, const Digest& hash)>;

  CompactRange() = default;
  // Rebuilds the range of a `size`-leaf tree from a store.
  static Result<CompactRange> load(NodeReader& reader, uint64_t size);

  void append(MerkleHasher& hasher, const Digest& leaf, const NodeSink& sink);
  template <typename Sink>
  void append_to(MerkleHasher& hasher, const Digest& leaf, Sink&& sink);
  // As append_to, but each parent comes from parent(level, index, left, right): a caller
  // that already computed some subtrees (in parallel, say) supplies them instead of hashing.
  template <typename Parent, typename Sink>
  void append_with(const Digest& leaf, Parent&& parent, Sink&& sink);

  uint64_t size() const { return size_; }
  Digest root(MerkleHasher& hasher) const;
  const std::vector<Digest>& nodes() const { return nodes_; }

 private:
  uint64_t size_ = 0;
  std::vector<Digest> nodes_;
};

template <typename Parent, typename Sink>
void CompactRange::append_with(const Digest& leaf, Parent&& parent, Sink&& sink) {
  nodes_.push_back(leaf);
  sink(0u, size_, leaf);
  unsigned level = 0;
  uint64_t index = size_;
  while (index & 1) {
    ++level;
    index >>= 1;
    Digest p = parent(level, index, nodes_[nodes_.size() - 2], nodes_.back());
    nodes_.pop_back();
    nodes_.back() = p;
    sink(level, index, p);
  }
  ++size_;
}

template <typename Sink>
void CompactRange::append_to(MerkleHasher& hasher, const Digest& leaf, Sink&& sink) {
  append_with(
      leaf, [&](unsigned, uint64_t, const Digest& l, const Digest& r) { return hasher.node(l, r); },
      std::forward<Sink>(sink));
}

// A whole tree in memory, for the `warden merkle` commands and tests.
class MemoryTree final : public NodeReader {
 public:
  void append_leaf_hash(const Digest& leaf);
  void append_data(std::string_view data) { append_leaf_hash(hasher_.leaf(data)); }
  uint64_t size() const { return range_.size(); }
  Digest root() { return range_.root(hasher_); }
  Result<Digest> root_at(uint64_t size);
  Result<Digest> node(unsigned level, uint64_t index) override;

 private:
  MerkleHasher hasher_;
  CompactRange range_;
  std::vector<Digest> nodes_;  // post-order
};

}  // namespace warden
