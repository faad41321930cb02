// Offline verification of a ledger directory or an export: the record chain, every stored
// Merkle node, the root at every checkpoint, checkpoint signatures and blob digests. A
// failure names the first bad sequence number or object; nothing is trusted that can be
// recomputed.
//
// Verification only reads: verify_ledger_dir() opens the ledger read-only, and nothing on
// disk changes. verify_ledger() borrows an open Ledger, reads one snapshot and hashes records
// on up to hardware_concurrency() threads of its own, each with its own read transaction; it
// joins them before returning.
//
// What an outcome means: an Error is "could not check" (missing directory, unreadable file
// or store, an unusable recorded key) and says nothing about the ledger's integrity; a
// VerifyReport with a problem is "checked and found bad" — treat the data as untrusted from
// that object on; a report without a problem is "every recomputable fact held".
//
// Truncation: a copy cut short and re-rooted is self-consistent, so only signatures show it.
// With a trusted key, records after the last signed checkpoint are reported as unsigned and
// (by default) refused, and checkpoints the auditor kept must be extended by the ledger.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "ledger/note.h"
#include "ledger/record.h"

namespace warden {

struct VerifyProblem {
  std::string object;           // "record 17", "checkpoint 120", "blob sha256:...", "manifest"
  std::optional<uint64_t> seq;  // the first bad sequence number, when one is known
  std::string message;
};

// A blob a record names, and the payload field that names it ("evidence_blob",
// "run_result.checks[0].runs[1].stdout.blob").
struct BlobReference {
  std::string field;
  Digest digest;
};

// Which blobs a record refers to. The ledger knows no payload schema: whoever writes the
// records supplies this (the kernel's table is kernel/record/blob_refs.h). Called from
// verification's hashing threads at once, so implementations must be thread-safe. An Error
// means the record names a blob in a form that is not a digest: verification reports it at
// that record.
class BlobReferences {
 public:
  virtual ~BlobReferences() = default;
  virtual Result<std::vector<BlobReference>> of(const RecordView& record) const = 0;
};

struct VerifyOptions {
  // Empty: trust the verifier key recorded in the ledger itself (self-consistency only; the
  // report says so).
  std::vector<NoteVerifier> keys;
  // Records after the last signed checkpoint are unsigned: nothing stops them from being
  // forged, or the signed history from being cut short there. true: they are a problem;
  // false: a warning. Unset: a problem exactly when `keys` are given, since a trusted key
  // vouches only for what it signed. With `keys`, a ledger with no signed checkpoint at all
  // (stored or kept) always fails: the key would vouch for nothing.
  std::optional<bool> require_signed_tail;
  // Signed checkpoint notes the auditor kept from earlier. Each must be signed by one of the
  // keys in use and name this ledger's origin; the ledger must extend it (hold at least its
  // size, with its root at that size): the defence against a copy cut short and re-rooted.
  std::vector<std::string> kept_checkpoints;
  // Borrowed. Null: blobs are only checked against their own names; otherwise every blob a
  // record refers to must be present and hash right, and a failure names that record.
  const BlobReferences* blob_references = nullptr;

  bool tail_required() const { return require_signed_tail.value_or(!keys.empty()); }
};

struct VerifyReport {
  uint64_t records = 0;      // records checked before stopping
  uint64_t checkpoints = 0;  // checkpoints whose signature and root held
  uint64_t kept_checkpoints = 0;  // the auditor's, whose signature and root held
  uint64_t blobs = 0;
  uint64_t blob_references = 0;  // references from records, each to a present, intact blob
  uint64_t bytes_hashed = 0;
  uint64_t signed_size = 0;      // records covered by the largest signed checkpoint (stored or kept)
  uint64_t unsigned_records = 0; // records after it: seqs signed_size .. records - 1
  Digest root;                 // recomputed root over all records
  std::string key_source;      // "--key" or "ledger metadata"
  std::vector<std::string> warnings;
  std::optional<VerifyProblem> problem;

  bool ok() const { return !problem.has_value(); }
};

class Ledger;

// Returns an Error only when verification could not run at all. Use the Ledger overload when
// this process already has the ledger open: LMDB forbids opening one environment twice in a
// process.
Result<VerifyReport> verify_ledger(const Ledger& ledger, const VerifyOptions& options);
Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, const VerifyOptions& options);
Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, const VerifyOptions& options);
// Picks the right one: an export holds ledger.json, a ledger data.mdb.
Result<VerifyReport> verify_path(const std::filesystem::path& path, const VerifyOptions& options);

// The same with only keys, every other option at its default (an initializer list, so that
// `verify_ledger(l, {})` is not ambiguous).
Result<VerifyReport> verify_ledger(const Ledger& ledger, std::initializer_list<NoteVerifier> keys);
Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, std::initializer_list<NoteVerifier> keys);
Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, std::initializer_list<NoteVerifier> keys);
Result<VerifyReport> verify_path(const std::filesystem::path& path, std::initializer_list<NoteVerifier> keys);

}  // namespace warden
