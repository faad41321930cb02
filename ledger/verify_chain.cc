// The unsigned tail and the choice of keys, for both forms of verification (verify_chain.h).
#include "ledger/verify_chain.h"

namespace warden::detail {

// With a trusted key, what no signature covers is not evidence: a forged record appended
// after the last checkpoint, or a copy cut short, verifies as well as the real thing.
void check_signed_tail(ChainChecker& checker, const VerifyOptions& options, VerifyReport& report) {
  if (!options.keys.empty() && !checker.signed_anything()) {
    checker.problem("checkpoints", {},
                    "none is signed by a trusted key, so the key vouches for nothing here (a copy cut short "
                    "before its first checkpoint, or a ledger never checkpointed: `warden ledger checkpoint` signs one)");
    return;
  }
  if (report.unsigned_records == 0) return;
  const uint64_t first = report.signed_size, last = report.records - 1;
  std::string what = std::to_string(report.unsigned_records) + " record" + (report.unsigned_records == 1 ? "" : "s") +
                     " (seq " + std::to_string(first) + (first == last ? "" : ".." + std::to_string(last)) +
                     ") after the last signed checkpoint carry no signature: they may be forged, or signed history "
                     "after them cut off";
  if (options.tail_required()) {
    checker.problem("unsigned tail", first, what + " (sign a checkpoint, or accept them unsigned with --allow-unsigned-tail)");
  } else {
    report.warnings.push_back(what);
  }
}

Result<std::vector<NoteVerifier>> choose_keys(const std::vector<NoteVerifier>& given, const std::string& recorded,
                                              VerifyReport& report) {
  if (!given.empty()) {
    report.key_source = "--key";
    return given;
  }
  auto own = NoteVerifier::parse(recorded);
  if (!own) return std::unexpected(own.error().with_context("the ledger's recorded verifier key"));
  report.key_source = "ledger metadata";
  report.warnings.push_back(
      "checkpoint signatures were checked against the key the ledger itself records; pass --key with a "
      "verifier key you trust for an independent check (the ledger's signer.pub, copied where the ledger's "
      "writers cannot change it)");
  return std::vector<NoteVerifier>{*own};
}

}  // namespace warden::detail
