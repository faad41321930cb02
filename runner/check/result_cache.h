// The runner's LMDB store: recorded RunResults keyed by SHA-256 of (tree hash, check specs,
// sandbox profile hash, toolchain identity) — a hit returns the recorded result without
// running anything — and the tree-hash memo (git object id -> SHA-256), so tree_sha256 of a
// tree that shares most of its objects with a hashed one costs only the changed part.
// Only results whose every check ended passed or failed are stored: a timeout, an error or
// a flaky oracle says something about the machine or the test, not about the tree. A result
// is stored with the bodies it names (RunResult::named_blobs), so a hit hands the caller the
// same evidence a fresh run would; a hit whose bodies are not all there is a miss.
//
// Ownership and threads: a ResultCache owns its LMDB environment; open a directory once per
// process (LMDB forbids opening an environment twice) and share it. get() and put() each use
// their own transaction, so threads may call them at once; several processes may share the
// directory (LMDB's lock file serializes writers). A Memo borrows the cache by pointer: the
// ResultCache must outlive it and must not be moved meanwhile. A Memo is one thread's, and
// its read transaction pins the snapshot it first read until store() or destruction.
//
// Errors and durability: put() and store() are durable once they return (LMDB commit with
// fsync); on error nothing of that call was written. get() returns nullopt for a miss and
// corrupt for a stored result that no longer parses (discard the cache). Memo::get() treats
// any read failure as a miss: a cache that cannot be read is recomputed, never trusted.
// Hashes a Memo computed and did not store() are lost, which costs time, not correctness.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "common/error.h"
#include "common/lmdb.h"
#include "runner/model/run_result.h"
#include "runner/workspace/tree_hash.h"

namespace warden {

class ResultCache {
 public:
  // `dir` is made or checked as Warden's alone (private_dir.h): a result found here is
  // believed without a run, so a directory or LMDB file another uid owns, or that its group
  // or others may write, is refused (verification_failed, naming the path, owner and fix).
  static Result<ResultCache> open(const std::filesystem::path& dir);

  struct Hit {
    RunResult result;
    RunBodies bodies;
  };
  Result<std::optional<Hit>> get(const Digest& key);
  // `bodies` must hold every blob the result names (invalid_argument otherwise).
  Status put(const Digest& key, const RunResult& result, const RunBodies& bodies);
  static bool cacheable(const RunResult& result);

  // A memo reading the stored hashes through one read transaction and keeping new ones in
  // memory until store() writes them in one transaction.
  class Memo final : public HashMemo {
   public:
    std::optional<Digest> get(const git_oid& id) override;
    void put(const git_oid& id, const Digest& hash) override { fresh_.put(id, hash); }
    // Ends the read transaction and writes what was computed.
    Status store();

   private:
    friend class ResultCache;
    explicit Memo(ResultCache& cache) : cache_(&cache) {}
    ResultCache* cache_;
    std::optional<lmdb::Txn> read_;
    MemoryHashMemo fresh_;
  };
  Memo memo() { return Memo(*this); }

 private:
  ResultCache(lmdb::Env env, MDB_dbi results, MDB_dbi hashes, MDB_dbi bodies)
      : env_(std::move(env)), results_(results), hashes_(hashes), bodies_(bodies) {}
  lmdb::Env env_;
  MDB_dbi results_, hashes_, bodies_;  // bodies: SHA-256 (32 bytes) -> bytes
};

}  // namespace warden
