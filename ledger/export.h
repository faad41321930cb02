// The portable, diffable form of a ledger, and the way back:
//
//   OUT/ledger.json            canonical manifest: format, origin, verifier key, size, root
//   OUT/records.jsonl          one canonical record per line: exactly the bytes that are hashed
//   OUT/checkpoints/<size>.note  signed tlog-checkpoint notes
//   OUT/blobs/<sha256 hex>     blob bytes
//
// An export re-imported gives a ledger with the same records, root and checkpoints.
//
// Ownership: export_ledger() borrows an open Ledger and reads one snapshot of it, so it
// sees a consistent ledger even while others append. ExportReader owns only the directory
// path and the parsed manifest; each call re-reads the files and keeps no open handle, so a
// reader may be shared by threads. It does not verify what it reads; import_ledger() runs
// verify_export_dir() first.
//
// Errors: already_exists means the target is taken and was left alone; verification_failed
// or corrupt from import_ledger() means the export is not faithful to its own records and
// signatures (do not use it); invalid_argument from ExportReader means a malformed file;
// io_error means the disk failed and a retry may succeed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/sha256.h"
#include "ledger/ledger.h"
#include "ledger/verify.h"

namespace warden {

inline constexpr std::string_view kExportFormat = "warden-ledger-export/1";

struct ExportManifest {
  std::string origin;
  std::string verifier_key;
  uint64_t size = 0;
  Digest root;
  uint64_t max_payload_bytes = 0;
};

class ExportReader {
 public:
  static Result<ExportReader> open(const std::filesystem::path& dir);
  const ExportManifest& manifest() const { return manifest_; }
  Result<std::vector<StoredCheckpoint>> checkpoints() const;
  // Streams records.jsonl; `visit(line_number, line)` returns false to stop early.
  Status for_each_record(const std::function<bool(uint64_t, std::string_view)>& visit) const;
  // Streams blobs/ in name order; `visit(name, bytes)` returns false to stop early.
  Status for_each_blob(const std::function<bool(const std::string&, std::string_view)>& visit) const;

 private:
  std::filesystem::path dir_;
  ExportManifest manifest_;
};

struct ExportSummary {
  uint64_t records = 0, checkpoints = 0, blobs = 0;
  Digest root;
};

// Writes into a sibling temporary directory and renames it to `out`: a crash leaves no
// half-written export under that name. `out` must not exist. The work directory is
// `<out>.partial`, removed first, so two exports to the same `out` must not run at once.
// Durability: checkpoint, blob and manifest files are fsynced, but records.jsonl and the
// final rename are not, so after a power loss run verify on the export before relying on it.
Result<ExportSummary> export_ledger(const Ledger& ledger, const std::filesystem::path& out);

// Verifies the export completely (verify_export_dir with `options`: its keys, or the
// export's own if none; its tail policy, kept checkpoints and blob references), then builds a
// new ledger at `dir` in a single transaction. `dir` must not hold a ledger; on failure
// nothing is left behind. The import is one LMDB write transaction: once it returns, the new
// ledger is durable; before then a reader sees at most the empty ledger, never part of the
// import. `dir` must not be open as a ledger elsewhere in this process.
Result<ExportSummary> import_ledger(const std::filesystem::path& export_dir, const std::filesystem::path& dir,
                                    const VerifyOptions& options);
// The same with only keys, every other option at its default.
Result<ExportSummary> import_ledger(const std::filesystem::path& export_dir, const std::filesystem::path& dir,
                                    std::initializer_list<NoteVerifier> keys);

}  // namespace warden
