#include "ledger/merkle.h"

#include <algorithm>
#include <bit>

namespace warden {
namespace {

// Largest power of two strictly less than n (n >= 2): the RFC's split point k.
uint64_t split_point(uint64_t n) { return std::bit_floor(n - 1); }

}  // namespace

Digest MerkleHasher::leaf(std::string_view data) {
  static constexpr char kLeafPrefix = 0x00;
  sha_.update(std::string_view(&kLeafPrefix, 1));
  sha_.update(data);
  return sha_.finish();
}

Digest MerkleHasher::node(const Digest& left, const Digest& right) {
  static constexpr char kNodePrefix = 0x01;
  sha_.update(std::string_view(&kNodePrefix, 1));
  sha_.update(left.view());
  sha_.update(right.view());
  return sha_.finish();
}

Digest MerkleHasher::empty_root() { return sha256(""); }

Digest leaf_hash(std::string_view data) {
  MerkleHasher h;
  return h.leaf(data);
}

Digest node_hash(const Digest& left, const Digest& right) {
  MerkleHasher h;
  return h.node(left, right);
}

uint64_t stored_node_count(uint64_t size) { return 2 * size - static_cast<uint64_t>(std::popcount(size)); }

uint64_t postorder_position(unsigned level, uint64_t index) {
  // Leaf (index+1)*2^level - 1 completes this node: before it come all nodes of the
  // leaves to its left, then the leaf itself and its ancestors up to `level`.
  return stored_node_count(((index + 1) << level) - 1) + level;
}

Result<Digest> range_root(NodeReader& reader, MerkleHasher& hasher, uint64_t lo, uint64_t hi) {
  if (lo >= hi) return fail(Errc::invalid_argument, "empty Merkle range");
  // Decompose [lo, hi) into aligned perfect subtrees, largest first, then fold from the right
  // exactly as MTH's recursion does when it splits at the largest power of two.
  Digest parts[64];
  int count = 0;
  uint64_t at = lo;
  uint64_t remaining = hi - lo;
  while (remaining > 0) {
    uint64_t width = std::bit_floor(remaining);
    unsigned level = static_cast<unsigned>(std::countr_zero(width));
    auto n = reader.node(level, at >> level);
    if (!n) return n;
    parts[count++] = *n;
    at += width;
    remaining -= width;
  }
  Digest acc = parts[count - 1];
  for (int i = count - 2; i >= 0; --i) acc = hasher.node(parts[i], acc);
  return acc;
}

Result<std::vector<Digest>> inclusion_proof(NodeReader& reader, uint64_t index, uint64_t size) {
  if (index >= size) {
    return fail(Errc::invalid_argument,
                "leaf index " + std::to_string(index) + " is not in a tree of size " + std::to_string(size));
  }
  MerkleHasher hasher;
  std::vector<Digest> top_down;
  uint64_t lo = 0, hi = size;
  while (hi - lo > 1) {
    uint64_t k = split_point(hi - lo);
    Result<Digest> sibling = index < lo + k ? range_root(reader, hasher, lo + k, hi)
                                            : range_root(reader, hasher, lo, lo + k);
    if (!sibling) return std::unexpected(sibling.error());
    top_down.push_back(*sibling);
    if (index < lo + k) hi = lo + k;
    else lo = lo + k;
  }
  std::reverse(top_down.begin(), top_down.end());
  return top_down;
}

Result<std::vector<Digest>> consistency_proof(NodeReader& reader, uint64_t m, uint64_t n) {
  if (m == 0 || m > n) {
    return fail(Errc::invalid_argument, "consistency proofs need 0 < size1 <= size2, got " + std::to_string(m) +
                                            " and " + std::to_string(n));
  }
  MerkleHasher hasher;
  std::vector<Digest> top_down;
  uint64_t lo = 0, hi = n;
  bool complete_subtree = true;  // the RFC's b flag
  while (true) {
    uint64_t width = hi - lo;
    if (m == width) {
      if (!complete_subtree) {
        auto r = range_root(reader, hasher, lo, hi);
        if (!r) return std::unexpected(r.error());
        top_down.push_back(*r);
      }
      break;
    }
    uint64_t k = split_point(width);
    if (m <= k) {
      auto r = range_root(reader, hasher, lo + k, hi);
      if (!r) return std::unexpected(r.error());
      top_down.push_back(*r);
      hi = lo + k;
    } else {
      auto r = range_root(reader, hasher, lo, lo + k);
      if (!r) return std::unexpected(r.error());
      top_down.push_back(*r);
      m -= k;
      lo += k;
      complete_subtree = false;
    }
  }
  std::reverse(top_down.begin(), top_down.end());
  return top_down;
}

bool verify_inclusion(const Digest& leaf, uint64_t index, uint64_t size, std::span<const Digest> proof,
                      const Digest& root) {
  if (index >= size) return false;
  MerkleHasher hasher;
  uint64_t fn = index, sn = size - 1;
  Digest r = leaf;
  for (const Digest& p : proof) {
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      r = hasher.node(p, r);
      if (!(fn & 1)) {
        while (!(fn & 1) && fn != 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      r = hasher.node(r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn == 0 && r == root;
}

bool verify_consistency(uint64_t size1, uint64_t size2, const Digest& root1, const Digest& root2,
                        std::span<const Digest> proof) {
  if (size1 > size2) return false;
  if (size1 == size2) return proof.empty() && root1 == root2;
  if (size1 == 0) return proof.empty();  // the empty tree is a prefix of every tree
  if (proof.empty()) return false;
  std::vector<Digest> path;
  if (std::has_single_bit(size1)) path.push_back(root1);
  path.insert(path.end(), proof.begin(), proof.end());
  MerkleHasher hasher;
  uint64_t fn = size1 - 1, sn = size2 - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Digest fr = path[0], sr = path[0];
  for (size_t i = 1; i < path.size(); ++i) {
    const Digest& c = path[i];
    if (sn == 0) return false;
    if ((fn & 1) || fn == sn) {
      fr = hasher.node(c, fr);
      sr = hasher.node(c, sr);
      if (!(fn & 1)) {
        while (!(fn & 1) && fn != 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      sr = hasher.node(sr, c);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return fr == root1 && sr == root2 && sn == 0;
}

Result<CompactRange> CompactRange::load(NodeReader& reader, uint64_t size) {
  CompactRange range;
  range.size_ = size;
  uint64_t start = 0;
  for (int bit = 63; bit >= 0; --bit) {
    uint64_t width = uint64_t{1} << bit;
    if (!(size & width)) continue;
    auto n = reader.node(static_cast<unsigned>(bit), start >> bit);
    if (!n) return std::unexpected(n.error());
    range.nodes_.push_back(*n);
    start += width;
  }
  return range;
}

void CompactRange::append(MerkleHasher& hasher, const Digest& leaf, const NodeSink& sink) {
  append_to(hasher, leaf, sink);
}

Digest CompactRange::root(MerkleHasher& hasher) const {
  if (nodes_.empty()) return MerkleHasher::empty_root();
  Digest acc = nodes_.back();
  for (size_t i = nodes_.size() - 1; i-- > 0;) acc = hasher.node(nodes_[i], acc);
  return acc;
}

void MemoryTree::append_leaf_hash(const Digest& leaf) {
  range_.append_to(hasher_, leaf, [&](unsigned, uint64_t, const Digest& h) { nodes_.push_back(h); });
}

Result<Digest> MemoryTree::root_at(uint64_t size) {
  if (size > this->size()) {
    return fail(Errc::invalid_argument,
                "size " + std::to_string(size) + " exceeds the tree size " + std::to_string(this->size()));
  }
  if (size == 0) return MerkleHasher::empty_root();
  return range_root(*this, hasher_, 0, size);
}

Result<Digest> MemoryTree::node(unsigned level, uint64_t index) {
  uint64_t pos = level < 64 ? postorder_position(level, index) : UINT64_MAX;
  if (pos >= nodes_.size()) {
    return fail(Errc::not_found, "Merkle node (" + std::to_string(level) + ", " + std::to_string(index) + ") not stored");
  }
  return nodes_[pos];
}

}  // namespace warden
