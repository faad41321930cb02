// The Warden ledger: an append-only log of records in one LMDB environment, with an
// RFC 6962 Merkle tree over the record hashes, signed checkpoints and a content-addressed
// blob store. Every acknowledged append is durable (LMDB commit with fsync), and several
// processes may share a ledger: LMDB serializes writers, and each write re-reads the tail.
// Within one process, open a ledger directory once and share the Ledger: LMDB forbids
// opening the same environment twice in a process.
//
// On disk (DIR/data.mdb, DIR/lock.mdb):
//   records      seq (u64 BE)            -> Record::encode_stored()
//   nodes        post-order position     -> 32-byte perfect-subtree hash (level 0 = record hash)
//   blobs        SHA-256 (32 bytes)      -> bytes
//   checkpoints  tree size (u64 BE)      -> signed tlog-checkpoint note
//   kinds        kind                    -> record count (u64 BE)
//   meta         "format", "origin", "verifier_key", "max_payload_bytes"
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/sha256.h"
#include "common/lmdb.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"

namespace warden {

inline constexpr std::string_view kLedgerFormat = "warden-ledger/1";

struct LedgerCreateOptions {
  std::string origin;        // checkpoint origin line, e.g. "example.com/warden/ci"
  std::string verifier_key;  // note verifier key whose signer signs this ledger's checkpoints
  uint64_t max_payload_bytes = uint64_t{1} << 20;
};

struct AppendEntry {
  std::string kind;
  Json payload;  // a JSON object; canonicalized before hashing
};

struct Appended {
  uint64_t seq = 0;
  Digest hash;
};

struct StoredCheckpoint {
  uint64_t size = 0;
  std::string note;  // signed note text
};

struct Dbis {
  MDB_dbi records = 0, nodes = 0, blobs = 0, checkpoints = 0, kinds = 0, meta = 0;
};

// A consistent read-only view (one LMDB read transaction). Proofs and roots read stored
// nodes only: O(log n) reads each. Not for concurrent use by several threads.
class LedgerSnapshot final : public NodeReader {
 public:
  uint64_t size() const { return size_; }
  Result<Digest> root() { return root_at(size_); }
  Result<Digest> root_at(uint64_t size);
  Result<Record> record(uint64_t seq);
  Result<Digest> record_hash(uint64_t seq) { return node(0, seq); }
  Result<std::vector<Digest>> inclusion_proof(uint64_t seq, uint64_t size);
  Result<std::vector<Digest>> consistency_proof(uint64_t size1, uint64_t size2);
  Result<std::string> blob(const Digest& digest);  // verified against its digest
  Result<std::vector<StoredCheckpoint>> checkpoints();
  Result<std::vector<std::pair<std::string, uint64_t>>> kind_counts();
  Result<Digest> node(unsigned level, uint64_t index) override;

  const lmdb::Txn& txn() const { return txn_; }
  const Dbis& dbis() const { return dbis_; }

 private:
  friend class Ledger;
  LedgerSnapshot(lmdb::Txn txn, Dbis dbis, uint64_t size) : txn_(std::move(txn)), dbis_(dbis), size_(size) {}
  lmdb::Txn txn_;
  Dbis dbis_;
  uint64_t size_;
  MerkleHasher hasher_;
  // Nodes high in the tree appear in nearly every proof; the snapshot never changes, so
  // they are read from LMDB once.
  std::unordered_map<uint64_t, Digest> upper_nodes_;
};

// One write transaction's worth of changes; see Ledger::write().
class WriteTxn {
 public:
  // ts defaults to the ledger's clock. The payload must be canonical JSON within the
  // ledger's size limit (checked again here: writers are not trusted to have checked).
  Result<Appended> append(std::string_view kind, std::string_view canonical_payload, std::optional<int64_t> ts = {});
  Result<Digest> put_blob(std::string_view bytes);
  Status put_checkpoint(uint64_t size, std::string_view note);
  uint64_t size() const { return range_.size(); }
  Digest root() { return range_.root(hasher_); }

 private:
  friend class Ledger;
  WriteTxn(lmdb::Txn& txn, const Dbis& dbis, Clock& clock, CompactRange range, Digest last, uint64_t max_payload)
      : txn_(txn), dbis_(dbis), clock_(clock), range_(std::move(range)), last_hash_(last), max_payload_bytes_(max_payload) {}
  Status flush_kind_counts();

  lmdb::Txn& txn_;
  const Dbis& dbis_;
  Clock& clock_;
  CompactRange range_;
  Digest last_hash_;
  uint64_t max_payload_bytes_;
  MerkleHasher hasher_;
  std::string stored_buf_;
  std::string canonical_buf_;
  std::vector<std::pair<std::string, uint64_t>> kind_counts_;
  std::optional<lmdb::Cursor> records_cursor_, nodes_cursor_;
};

class Ledger {
 public:
  enum class Mode { read_only, read_write };

  // Creates DIR (its parent must exist) and an empty ledger in it.
  static Status create(const std::filesystem::path& dir, const LedgerCreateOptions& options);
  static Result<Ledger> open(const std::filesystem::path& dir, Mode mode, Clock& clock);

  Ledger(Ledger&&) noexcept = default;
  Ledger& operator=(Ledger&&) noexcept = default;

  const std::filesystem::path& dir() const { return dir_; }
  const std::string& origin() const { return origin_; }
  const std::string& verifier_key() const { return verifier_key_; }
  uint64_t max_payload_bytes() const { return max_payload_bytes_; }
  // True when the ledger was opened without LMDB's lock file (read-only media).
  bool unlocked_read() const { return unlocked_read_; }

  Result<Appended> append(std::string_view kind, const Json& payload);
  // Group commit: all entries in one transaction and one fsync, all or nothing.
  Result<std::vector<Appended>> append_batch(std::span<const AppendEntry> entries);
  Result<Digest> put_blob(std::string_view bytes);
  // Signs the current tree head with `signer` (whose verifier must be the ledger's) and
  // stores the checkpoint; returns it.
  Result<StoredCheckpoint> checkpoint(const NoteSigner& signer);

  // Runs `body` inside one write transaction; commits only if it succeeds.
  template <typename Body>
  Status write(Body&& body);

  Result<LedgerSnapshot> snapshot() const;

 private:
  Ledger(std::filesystem::path dir, lmdb::Env env, Dbis dbis, Clock& clock)
      : dir_(std::move(dir)), env_(std::move(env)), dbis_(dbis), clock_(&clock) {}
  Result<WriteTxn> begin_write(lmdb::Txn& txn);
  void install(const WriteTxn& writer);
  Result<std::string> prepare_payload(const Json& payload) const;

  std::filesystem::path dir_;
  lmdb::Env env_;
  Dbis dbis_;
  Clock* clock_;
  std::string origin_, verifier_key_;
  uint64_t max_payload_bytes_ = 0;
  bool unlocked_read_ = false;
  bool read_only_ = false;
  // Cached right edge of the tree; re-validated against the store at each write.
  CompactRange range_;
  Digest last_hash_;
};

template <typename Body>
Status Ledger::write(Body&& body) {
  auto txn = lmdb::Txn::begin(env_, false);
  if (!txn) return std::unexpected(txn.error());
  auto writer = begin_write(*txn);
  if (!writer) return std::unexpected(writer.error());
  if (Status st = body(*writer); !st) return st;  // txn aborts on scope exit
  if (Status st = writer->flush_kind_counts(); !st) return st;
  writer->records_cursor_.reset();
  writer->nodes_cursor_.reset();
  if (Status st = txn->commit(); !st) return st;
  install(*writer);
  return {};
}

}  // namespace warden
