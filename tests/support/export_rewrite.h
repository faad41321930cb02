// What an attacker does to an export after cutting or extending its records: writes
// records.jsonl from `lines` and re-roots the manifest (size, root) over them, so the export
// is self-consistent and only signatures and kept checkpoints can tell. Header-only: the
// ledger and kernel tests that forge exports include it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/canonical_json.h"
#include "ledger/merkle.h"
#include "tests/support/files.h"

namespace warden::test {

inline void rewrite_export_records(const std::filesystem::path& dir, const std::vector<std::string>& lines) {
  std::string text;
  MerkleHasher hasher;
  CompactRange range;
  for (const auto& line : lines) {
    text += line + "\n";
    range.append(hasher, leaf_hash(line), [](unsigned, uint64_t, const Digest&) {});
  }
  write_file(dir / "records.jsonl", text);
  auto manifest = parse_json(read_file(dir / "ledger.json")).value();
  manifest["size"] = lines.size();
  manifest["root"] = range.root(hasher).str();
  write_file(dir / "ledger.json", canonicalize(manifest).value() + "\n");
}

}  // namespace warden::test
