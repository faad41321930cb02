// The Warden ledger: an append-only log of records in one LMDB environment, with an
// RFC 6962 Merkle tree over the record hashes, signed checkpoints and a content-addressed
// blob store. Every acknowledged append is durable (LMDB commit with fsync), and several
// processes may share a ledger: LMDB serializes writers, and each write re-reads the tail.
// Within one process, open a ledger directory once and share the Ledger: LMDB forbids
// opening the same environment twice in a process. A Ledger, a LedgerSnapshot and a WriteTxn
// are each for one thread at a time.
//
// On disk (DIR/data.mdb, DIR/lock.mdb; DIR/signer.key and DIR/signer.pub: ledger_keys.h):
//   records      seq (u64 BE)            -> Record::encode_stored()
//   nodes        post-order position     -> 32-byte perfect-subtree hash (level 0 = record hash)
//   blobs        SHA-256 (32 bytes)      -> bytes
//   checkpoints  tree size (u64 BE)      -> signed tlog-checkpoint note
//   kinds        kind                    -> record count (u64 BE)
//   runs         run id (see ledger_impl.h) -> seqs (u64 BE, sorted duplicates) of the records
//                                          whose top-level "run_id" or "run" is that string
//   meta         "format", "origin", "verifier_key", "max_payload_bytes",
//                "runs_indexed" (how many records, from seq 0, the runs index covers)
// The runs index is derived data, written in the same transaction as the records it indexes;
// exports do not carry it and import rebuilds it. A ledger written before the index existed
// (or by an older binary since) has it missing or behind: a read-write open and every write
// transaction bring it up to date first, and a read-only snapshot scans the records it does
// not cover (see LedgerSnapshot::run_records). LMDB itself is private to ledger/.
//
// ledger.cc is one unit (~770 lines): Ledger, WriteTxn and LedgerSnapshot are the writer and
// readers of the one LMDB layout above, sharing its opening, tail checks and runs-index upkeep.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/canonical_json.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/sha256.h"
#include "ledger/merkle.h"
#include "ledger/note.h"
#include "ledger/record.h"

namespace warden {

inline constexpr std::string_view kLedgerFormat = "warden-ledger/1";

// The smallest payload limit a ledger may have. Below it a ledger takes no record worth
// keeping (the kernel's smallest, a run's status, is over 100 bytes; 0 refuses every append).
inline constexpr uint64_t kMinMaxPayloadBytes = 64;

struct LedgerCreateOptions {
  std::string origin;        // checkpoint origin line, e.g. "example.com/warden/ci"
  std::string verifier_key;  // note verifier key whose signer signs this ledger's checkpoints
  uint64_t max_payload_bytes = uint64_t{1} << 20;  // at least kMinMaxPayloadBytes
  // Kept in DIR/signer.key (ledger_keys.h) when set; must be verifier_key's signer. Not
  // owned; read during create() only.
  const NoteSigner* signer = nullptr;
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

namespace detail {
struct LedgerState;    // the LMDB environment and database handles (ledger_impl.h)
struct SnapshotState;  // one LMDB read transaction
struct WriteState;     // one LMDB write transaction and its cursors
struct LedgerAccess;   // how ledger/'s own files reach a snapshot's transaction
}  // namespace detail

// A consistent read-only view (one LMDB read transaction): later writes are not seen. Proofs
// and roots read stored nodes only: O(log n) reads each. Errc::corrupt means the store does
// not hold what the ledger wrote (a missing or malformed record or node). Not for concurrent
// use by several threads; it must not outlive the Ledger it came from.
class LedgerSnapshot final : public NodeReader {
 public:
  LedgerSnapshot(LedgerSnapshot&&) noexcept;
  LedgerSnapshot& operator=(LedgerSnapshot&&) noexcept;
  ~LedgerSnapshot() override;

  uint64_t size() const { return size_; }
  Result<Digest> root() { return root_at(size_); }
  Result<Digest> root_at(uint64_t size);
  Result<Record> record(uint64_t seq);
  // The record without copying it: the view borrows the snapshot's pages and is valid until
  // the snapshot is destroyed or moved from.
  Result<RecordView> record_view(uint64_t seq);
  Result<Digest> record_hash(uint64_t seq) { return node(0, seq); }

  enum class Order { forward, backward };
  // Calls visit(view) for the records [from, min(to, size())), oldest first (forward) or
  // newest first (backward); views as in record_view(). `visit` returns true to go on and
  // false to stop; an error it returns stops the walk and is returned.
  using RecordVisitor = std::function<Result<bool>(const RecordView&)>;
  Status for_each_record(uint64_t from, uint64_t to, const RecordVisitor& visit, Order order = Order::forward);

  // The seqs, ascending, of the records whose top-level "run_id" (kernel records) or "run"
  // (pipeline records) is the string `run_id` — callers that care which field named the run
  // check it. One index lookup, plus a scan of the records the index does not cover yet:
  // none in a ledger last written by this version, all of them in an older ledger opened
  // read-only.
  Result<std::vector<uint64_t>> run_records(std::string_view run_id);

  Result<std::vector<Digest>> inclusion_proof(uint64_t seq, uint64_t size);
  Result<std::vector<Digest>> consistency_proof(uint64_t size1, uint64_t size2);
  Result<std::string> blob(const Digest& digest);  // verified against its digest
  Result<std::vector<StoredCheckpoint>> checkpoints();
  Result<std::vector<std::pair<std::string, uint64_t>>> kind_counts();
  Result<Digest> node(unsigned level, uint64_t index) override;

 private:
  friend class Ledger;
  friend struct detail::LedgerAccess;
  LedgerSnapshot(std::unique_ptr<detail::SnapshotState> state, uint64_t size);
  Result<std::string_view> stored(uint64_t seq);
  std::unique_ptr<detail::SnapshotState> state_;
  uint64_t size_;
  MerkleHasher hasher_;
  // Nodes high in the tree appear in nearly every proof; the snapshot never changes, so
  // they are read from LMDB once.
  std::unordered_map<uint64_t, Digest> upper_nodes_;
};

// One write transaction's worth of changes; see Ledger::write(). Valid only inside the body
// it is given to. Errors leave the transaction to be aborted: nothing of it is written.
class WriteTxn {
 public:
  // ts defaults to the ledger's clock. The payload must be canonical JSON within the
  // ledger's size limit (checked again here: writers are not trusted to have checked).
  // Indexes the record under its top-level "run_id" / "run" string, if it has one.
  Result<Appended> append(std::string_view kind, std::string_view canonical_payload, std::optional<int64_t> ts = {});
  Result<Digest> put_blob(std::string_view bytes);
  Status put_checkpoint(uint64_t size, std::string_view note);
  uint64_t size() const;
  Digest root();

 private:
  friend class Ledger;
  explicit WriteTxn(detail::WriteState& state) : state_(state) {}
  detail::WriteState& state_;
};

class Ledger {
 public:
  enum class Mode { read_only, read_write };

  // Creates DIR (and its missing parents) and an empty ledger in it, with its keys beside it
  // (ledger_keys.h): DIR/signer.pub always, DIR/signer.key when options.signer is set.
  static Status create(const std::filesystem::path& dir, const LedgerCreateOptions& options);
  // not_found if DIR holds no data.mdb; Errc::corrupt, naming the file, if data.mdb or
  // lock.mdb is not a regular file or data.mdb is shorter than its meta pages say (checked
  // before LMDB maps it: see lmdb::check_files).
  static Result<Ledger> open(const std::filesystem::path& dir, Mode mode, Clock& clock);

  Ledger(Ledger&&) noexcept;
  Ledger& operator=(Ledger&&) noexcept;
  ~Ledger();

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

  // Runs `body` inside one write transaction; commits (with fsync) only if it succeeds. An
  // error means nothing of the body was written. Before the first write, and whenever another
  // process has appended since, the tail is checked (O(log n) reads): the last record must
  // re-hash to its stored leaf, chain to the one before and hash up into the tree's right
  // edge; if not, Errc::corrupt names the record and nothing is written.
  Status write(const std::function<Status(WriteTxn&)>& body);

  Result<LedgerSnapshot> snapshot() const;

 private:
  Ledger(std::filesystem::path dir, std::unique_ptr<detail::LedgerState> state, Clock& clock);
  Result<std::string> prepare_payload(const Json& payload) const;

  std::filesystem::path dir_;
  std::unique_ptr<detail::LedgerState> state_;
  Clock* clock_;
  std::string origin_, verifier_key_;
  uint64_t max_payload_bytes_ = 0;
  bool unlocked_read_ = false;
  bool read_only_ = false;
};

}  // namespace warden
