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
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "ledger/note.h"

namespace warden {

struct VerifyProblem {
  std::string object;           // "record 17", "checkpoint 120", "blob sha256:...", "manifest"
  std::optional<uint64_t> seq;  // the first bad sequence number, when one is known
  std::string message;
};

struct VerifyReport {
  uint64_t records = 0;      // records checked before stopping
  uint64_t checkpoints = 0;  // checkpoints whose signature and root held
  uint64_t blobs = 0;
  uint64_t bytes_hashed = 0;
  Digest root;                 // recomputed root over all records
  std::string key_source;      // "--key" or "ledger metadata"
  std::vector<std::string> warnings;
  std::optional<VerifyProblem> problem;

  bool ok() const { return !problem.has_value(); }
};

class Ledger;

// `keys` empty: trust the verifier key recorded in the ledger itself (self-consistency
// only; the report says so). Returns an Error only when verification could not run at all.
// Use the Ledger overload when this process already has the ledger open: LMDB forbids
// opening one environment twice in a process.
Result<VerifyReport> verify_ledger(const Ledger& ledger, const std::vector<NoteVerifier>& keys);
Result<VerifyReport> verify_ledger_dir(const std::filesystem::path& dir, const std::vector<NoteVerifier>& keys);
Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, const std::vector<NoteVerifier>& keys);

// Picks the right one: an export holds ledger.json, a ledger data.mdb.
Result<VerifyReport> verify_path(const std::filesystem::path& path, const std::vector<NoteVerifier>& keys);

}  // namespace warden
