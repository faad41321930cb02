// Verifying an export (verify.h): records.jsonl read line by line into the chain checker
// (verify_chain.h), the manifest held to what was recomputed, then the blob files.
#include "ledger/verify.h"

#include "ledger/export.h"
#include "ledger/record.h"
#include "ledger/verify_chain.h"

namespace warden {

using detail::BlobScan;
using detail::ChainChecker;
using detail::ReferenceLog;
using detail::check_signed_tail;
using detail::choose_keys;

Result<VerifyReport> verify_export_dir(const std::filesystem::path& dir, const VerifyOptions& options) {
  auto reader = ExportReader::open(dir);
  if (!reader) return std::unexpected(reader.error());
  const ExportManifest& manifest = reader->manifest();
  VerifyReport report;
  auto chosen = choose_keys(options.keys, manifest.verifier_key, report);
  if (!chosen) return std::unexpected(chosen.error());
  ChainChecker checker(manifest.origin, *chosen, report);

  auto checkpoints = reader->checkpoints();
  if (!checkpoints) {
    checker.problem("checkpoints", {}, checkpoints.error().message);
    return report;
  }
  if (!checker.load_checkpoints(*checkpoints, options.kept_checkpoints)) return report;
  ReferenceLog references;

  auto status = reader->for_each_record([&](uint64_t line_no, std::string_view line) -> bool {
    auto record = Record::from_canonical(line);
    if (!record) {
      return checker.record_problem(checker.size(),
                                    "records.jsonl line " + std::to_string(line_no) + ": " + record.error().message);
    }
    if (!checker.add(record->view(), line)) return false;
    if (!options.blob_references) return true;
    auto refs = options.blob_references->of(record->view());
    return (refs && refs->empty()) || references.add(checker, record->seq, record->kind, refs);
  });
  if (!status) {
    checker.problem("records.jsonl", checker.size(), status.error().message);
    return report;
  }
  if (report.problem || !checker.finish()) return report;
  if (checker.size() != manifest.size) {
    checker.problem("manifest", {}, "declares " + std::to_string(manifest.size) + " records, records.jsonl holds " +
                                        std::to_string(checker.size()));
    return report;
  }
  if (report.root != manifest.root) {
    checker.problem("manifest", manifest.size == 0 ? std::optional<uint64_t>() : manifest.size - 1,
                    "declared root " + manifest.root.str() + " differs from the recomputed root " + report.root.str());
    return report;
  }

  BlobScan scan;
  auto blob_status = reader->for_each_blob([&](const std::string& name, std::string_view bytes) -> bool {
    if (auto digest = Digest::from_hex(name)) scan.add(*digest, bytes, report);
    else scan.malformed("blob " + name, "file name is not a SHA-256 digest");
    return true;
  });
  if (!blob_status) {
    checker.problem("blobs", {}, blob_status.error().message);
    return report;
  }
  if (!scan.finish(checker, references, report)) return report;
  check_signed_tail(checker, options, report);
  return report;
}

}  // namespace warden
