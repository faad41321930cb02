// tree_sha256: the SHA-256 Merkle root that goes with a git tree id (git names trees by
// SHA-1) wherever Warden's evidence names a tree (run_result.h). It commits to exactly the
// tree's set of (path, mode, content SHA-256) and is built along the tree's own directories,
// so it can be computed in O(changed directories) for a tree that differs from an already
// hashed one in a few files:
//   file or symlink:  SHA-256 of its bytes (a symlink's bytes are its target)
//   submodule:        SHA-256 of "gitlink " + the commit id in hex
//   directory:        SHA-256 of "warden-tree-v1\0" then, per entry in git's order,
//                     "<octal mode> <name>\0" + the entry's 32-byte hash
// Hashes are memoized by git object id (the same id always has the same content), so
// unchanged subtrees and files cost one lookup.
//
// tree_sha256() borrows `repo` and `memo` for the call; it writes nothing to the repository.
// Neither a GitRepo nor a memo is thread-safe (MemoryHashMemo is a plain map), so one of each
// per thread. A memo is trusted: a wrong entry gives a wrong hash, so fill one only through
// tree_sha256. A Refusal ("repository_error") means an object could not be read: the tree
// is missing or the repository damaged; no hash is returned and the memo keeps what was
// computed before the failure.
#pragma once

#include <git2.h>

#include <optional>
#include <string>
#include <unordered_map>

#include "common/sha256.h"
#include "runner/workspace/git_repo.h"

namespace warden {

class HashMemo {
 public:
  virtual ~HashMemo() = default;
  virtual std::optional<Digest> get(const git_oid& id) = 0;
  virtual void put(const git_oid& id, const Digest& hash) = 0;
};

class MemoryHashMemo : public HashMemo {
 public:
  std::optional<Digest> get(const git_oid& id) override;
  void put(const git_oid& id, const Digest& hash) override;
  const std::unordered_map<std::string, Digest>& entries() const { return map_; }
  void clear() { map_.clear(); }

 private:
  std::unordered_map<std::string, Digest> map_;  // raw 20-byte id -> hash
};

Checked<Digest> tree_sha256(GitRepo& repo, const ObjectId& tree, HashMemo& memo);

}  // namespace warden
