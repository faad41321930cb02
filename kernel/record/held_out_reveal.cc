#include "kernel/record/held_out_reveal.h"

#include <algorithm>

namespace warden::kernel {

Result<RevealOutcome> reveal_held_out(Ledger& ledger, const HeldOutVault& vault, const Digest& bundle_digest) {
  auto bundle = vault.open(bundle_digest);
  if (!bundle) return std::unexpected(bundle.error());
  auto runs = vault.runs(bundle_digest);
  if (!runs) return std::unexpected(runs.error());
  HeldOutRevealRecord record;
  record.held_out_sha256 = bundle_digest;
  record.at = bundle->at;
  record.salt = bundle->salt;
  Result<RevealOutcome> out = fail(Errc::internal, "the ledger write did not run");
  Status st = ledger.write([&](WriteTxn& writer) -> Status {
    for (const HeldOutFile& f : bundle->files) {
      auto blob = writer.put_blob(f.content);
      if (!blob) return std::unexpected(blob.error());
      record.files.push_back({f.path, f.mode, *blob});
    }
    for (const SealedRun& run : *runs) {
      auto text = canonicalize(run.run_result);
      if (!text) return std::unexpected(text.error());
      auto blob = writer.put_blob(*text);
      if (!blob) return std::unexpected(blob.error());
      HeldOutRevealRecord::Run r{run.run_result_sha256, *blob, {}};
      for (const auto& [digest, bytes] : run.bodies) {
        auto body = writer.put_blob(bytes);
        if (!body) return std::unexpected(body.error());
        r.bodies.push_back(*body);
      }
      std::sort(r.bodies.begin(), r.bodies.end());
      record.runs.push_back(std::move(r));
    }
    std::sort(record.runs.begin(), record.runs.end(),
              [](const HeldOutRevealRecord::Run& a, const HeldOutRevealRecord::Run& b) { return a.run_result_sha256 < b.run_result_sha256; });
    auto canonical = canonicalize(record.to_json());
    if (!canonical) return std::unexpected(canonical.error());
    auto appended = writer.append(HeldOutRevealRecord::kind, *canonical);
    if (!appended) return std::unexpected(appended.error());
    out = RevealOutcome{*appended, record};
    return {};
  });
  if (!st) return std::unexpected(st.error());
  // After the ledger has it: a crash in between leaves a bundle that is revealed and still
  // offered to the next proposal, never one offered as unseen that is not.
  if (Status marked = vault.mark_revealed(bundle_digest); !marked) return std::unexpected(marked.error());
  return out;
}

Result<std::optional<Record>> find_reveal(LedgerSnapshot& snapshot, const Digest& bundle, uint64_t from) {
  for (uint64_t seq = from; seq < snapshot.size(); ++seq) {
    auto view = snapshot.record_view(seq);
    if (!view) return std::unexpected(view.error());
    if (view->kind != record_kind::held_out_reveal) continue;
    auto record = snapshot.record(seq);
    if (!record) return std::unexpected(record.error());
    auto payload = parse_json(record->payload);
    auto reveal = payload ? HeldOutRevealRecord::from_json(*payload) : Result<HeldOutRevealRecord>(std::unexpected(payload.error()));
    if (reveal && reveal->held_out_sha256 == bundle) return std::optional<Record>(std::move(*record));
  }
  return std::optional<Record>();
}

Result<RevealedBundle> read_reveal(const HeldOutRevealRecord& record, const std::function<Result<std::string>(const Digest&)>& blob) {
  RevealedBundle out;
  out.bundle.at = record.at;
  out.bundle.salt = record.salt;
  for (const HeldOutRevealRecord::File& f : record.files) {
    auto bytes = blob(f.blob);
    if (!bytes) return fail(Errc::verification_failed, "the held-out file " + f.path + " (blob " + f.blob.str() + ") is missing");
    if (!out.bundle.files.empty() && out.bundle.files.back().path >= f.path) {
      return fail(Errc::verification_failed, "the held-out files are not sorted by path, each once");
    }
    out.bundle.files.push_back({f.path, f.mode, std::move(*bytes)});
  }
  // Through the bundle's own reader, which holds paths, modes and the salt to their rules.
  auto checked = HeldOutBundle::from_json(out.bundle.to_json());
  if (!checked) return fail(Errc::verification_failed, "the revealed bundle: " + checked.error().message);
  if (checked->digest() != record.held_out_sha256) {
    return fail(Errc::verification_failed, "the revealed files and salt hash to " + checked->digest().str() +
                                               ", not to the committed " + record.held_out_sha256.str());
  }
  for (const HeldOutRevealRecord::Run& r : record.runs) {
    auto text = blob(r.blob);
    if (!text) return fail(Errc::verification_failed, "the sealed run " + r.run_result_sha256.str() + " is missing");
    auto json = parse_json(*text);
    auto run = json ? RunResult::from_json(*json) : Result<RunResult>(std::unexpected(json.error()));
    if (!run) return fail(Errc::verification_failed, "the sealed run " + r.run_result_sha256.str() + ": " + run.error().message);
    if (run->deterministic_digest() != r.run_result_sha256) {
      return fail(Errc::verification_failed, "the sealed run " + r.run_result_sha256.str() + " hashes to " + run->deterministic_digest().str());
    }
    for (const Digest& named : run->named_blobs()) {
      if (std::find(r.bodies.begin(), r.bodies.end(), named) == r.bodies.end() || !blob(named)) {
        return fail(Errc::verification_failed, "the sealed run " + r.run_result_sha256.str() + " names blob " + named.str() + ", which is not revealed");
      }
    }
    out.runs.emplace(sealed_result_commitment(record.salt, r.run_result_sha256), std::move(*run));
  }
  return out;
}

}  // namespace warden::kernel
