// Inside ledger/ only: the LMDB state behind Ledger, LedgerSnapshot and WriteTxn, and the
// run-index helpers. Nothing outside ledger/ includes this file: LMDB is the ledger's
// private business (tests/ledger/raw_lmdb.* opens data.mdb directly, as an attacker would,
// without it). ledger.cc, export.cc and verify.cc reach a snapshot's transaction through
// LedgerAccess.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/lmdb.h"
#include "ledger/ledger.h"
#include "ledger/merkle.h"

namespace warden::detail {

struct Dbis {
  MDB_dbi records = 0, nodes = 0, blobs = 0, checkpoints = 0, kinds = 0, meta = 0;
  // The runs index: absent from ledgers made before it, when they are opened read-only.
  std::optional<MDB_dbi> runs;
};

struct LedgerState {
  explicit LedgerState(lmdb::Env e) : env(std::move(e)) {}
  lmdb::Env env;
  Dbis dbis;
  // Cached right edge of the tree; re-validated against the store at each write.
  CompactRange range;
  Digest last_hash;
};

struct SnapshotState {
  lmdb::Txn txn;
  Dbis dbis;
};

struct WriteState {
  WriteState(lmdb::Txn& t, const Dbis& d, Clock& c, CompactRange r, Digest last, uint64_t max_payload)
      : txn(t), dbis(d), clock(c), range(std::move(r)), last_hash(last), max_payload_bytes(max_payload) {}
  lmdb::Txn& txn;
  const Dbis& dbis;
  Clock& clock;
  CompactRange range;
  Digest last_hash;
  uint64_t max_payload_bytes;
  MerkleHasher hasher;
  std::string stored_buf;
  std::string canonical_buf;
  std::vector<std::pair<std::string, uint64_t>> kind_counts;
  std::optional<lmdb::Cursor> records_cursor, nodes_cursor;
  bool appended = false;  // the runs index must be marked as covering the new size
};

struct LedgerAccess {
  static const lmdb::Txn& txn(const LedgerSnapshot& s) { return s.state_->txn; }
  static const Dbis& dbis(const LedgerSnapshot& s) { return s.state_->dbis; }
};

// The top-level "run_id" and "run" string values of a canonical JSON object, decoded; at
// most two. A field of the same name nested deeper is not one of them. Malformed input gives
// none (the ledger indexes what it is given; it does not judge payloads here).
std::vector<std::string> top_level_run_ids(std::string_view canonical_payload);

// The runs index key of a run id: the id itself, or for ids LMDB cannot key (empty, over
// kMaxRunKeyBytes) or that begin with a NUL byte, a NUL followed by the id's SHA-256. Hashed
// keys may in principle collide, so lookups by a hashed key re-check each record.
inline constexpr size_t kMaxRunKeyBytes = 400;
std::string run_index_key(std::string_view run_id);
inline bool is_hashed_run_key(std::string_view key) { return !key.empty() && key.front() == '\0'; }

}  // namespace warden::detail
