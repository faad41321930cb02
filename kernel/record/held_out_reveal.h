// A held-out bundle's reveal (held_out.h): its files and every run sealed with it leave the
// vault (held_out_vault.h) for the ledger, as one held_out_reveal record and the blobs it
// names, in one ledger transaction. From then on replay holds the committed digest to the
// files and salt, each held_out_run record to its result, and re-derives each decision that
// used the bundle; before it, those decisions are pending reveal, never verified.
//
// A bundle may judge several runs (an agent's retries through separate `warden propose`
// calls): its owner reveals it once none is left to judge. Revealing again appends a record
// holding the runs sealed since. Errors: not_found for a bundle the vault does not hold,
// corrupt for one that no longer hashes to its name, the ledger's own.
#pragma once

#include "common/error.h"
#include "common/sha256.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"

namespace warden::kernel {

struct RevealOutcome {
  Appended record;       // the held_out_reveal record
  HeldOutRevealRecord revealed;
};

Result<RevealOutcome> reveal_held_out(Ledger& ledger, const HeldOutVault& vault, const Digest& bundle);

// The bundle and the sealed runs a held_out_reveal record publishes, read back from the blob
// store (`blob` gives a blob's bytes) and held to the commitment: the files and salt must hash
// to `held_out_sha256`, each run's result to its digest, and every blob a result names must be
// there. A difference is Errc::verification_failed naming it.
// The first held_out_reveal record of `bundle` at or after `from`, if any (a scan: the ledger
// keeps no index by payload).
Result<std::optional<Record>> find_reveal(LedgerSnapshot& snapshot, const Digest& bundle, uint64_t from = 0);

struct RevealedBundle {
  HeldOutBundle bundle;
  std::map<Digest, RunResult> runs;  // by sealed_result_commitment(): what held_out_run records name
};
Result<RevealedBundle> read_reveal(const HeldOutRevealRecord& record, const std::function<Result<std::string>(const Digest&)>& blob);

}  // namespace warden::kernel
