// Acceptance receipts: portable proof that the kernel accepted a commit. A receipt bundles
//
//   - an in-toto Statement v1 in a DSSE envelope signed with the kernel's key, whose subject
//     is the git commit and tree and whose predicate names the run, plan step, attempt and
//     the plan, proposal, run-result and policy digests, plus the ledger seq and record hash
//     of the "commit" record that holds them;
//   - that ledger record itself (its export JSON form, enough to recompute its leaf hash),
//     its RFC 9162 inclusion proof, and a signed tlog-checkpoint the proof leads to.
//
// verify_receipt() checks all of it with nothing but the kernel's verifier key: no ledger,
// no repository, no network.
//
//   {"format": "warden.receipt/v1",
//    "envelope": {DSSE, payloadType application/vnd.in-toto+json},
//    "ledger": {"record": {...}, "seq": N, "tree_size": M, "inclusion_proof": [hex...],
//               "checkpoint": "<signed note for size M>"},
//    "held_out_reveal": {"record": {...}, "inclusion_proof": [hex...]}}   (when there is one)
// A commit accepted on held-out checks (held_out.h) names their bundle's digest in its record
// and so in the statement; the bundle's reveal record, once in the ledger, is bundled with
// its inclusion proof under the same checkpoint.
//
// Ownership and durability: find_commit_record() borrows a snapshot; make_receipt() borrows
// the Ledger and the signer, and the returned JSON is the caller's. make_receipt() writes to
// the ledger only when no stored checkpoint covers the record: it then appends a signed
// checkpoint (durable, like every ledger write) even if a later step of the receipt fails.
// verify_receipt() does no I/O and trusts nothing but `key`. Thread safety follows the
// ledger's (ledger/ledger.h); the functions keep no state of their own.
// Errors: verification_failed means "no receipt" — for make_receipt, the commit record lacks
// a matching accepting decision; for verify_receipt, the receipt must not be trusted.
// invalid_argument is a bad request (a malformed commit id, the wrong signer key); corrupt
// means the ledger contradicts itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/record/records.h"
#include "ledger/ledger.h"
#include "ledger/note.h"
#include "ledger/record.h"

namespace warden::kernel {

inline constexpr std::string_view kReceiptFormat = "warden.receipt/v1";
inline constexpr std::string_view kStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kAcceptancePredicateType = "https://warden.dev/acceptance/v1";

struct LocatedCommit {
  Record record;
  CommitRecord commit;
};

// The newest "commit" record whose payload names `commit` (40 hex); not_found otherwise.
// The ledger keeps no index by payload, so this scans records newest first.
Result<LocatedCommit> find_commit_record(LedgerSnapshot& snapshot, std::string_view commit);

// The in-toto Statement a receipt for this record carries; verification rebuilds it from
// the record and requires the signed one to be exactly this.
Json acceptance_statement(const CommitRecord& commit, uint64_t seq, const Digest& record_hash);

// Signs the statement and bundles the proof against the newest stored checkpoint that
// covers the record; when none does, signs a new checkpoint (stored in the ledger, so
// `ledger` must be writable then). `signer` must be the ledger's checkpoint key.
// Anyone can append a bare commit record, so nothing is signed unless its decision_seq names
// an earlier "decision" record that accepted the same run, step, attempt, plan and policy;
// otherwise verification_failed, naming what does not match.
Result<Json> make_receipt(Ledger& ledger, const LocatedCommit& located, const NoteSigner& signer);

struct VerifiedReceipt {
  CommitRecord commit;
  uint64_t seq = 0;
  uint64_t tree_size = 0;
  Digest root;
  std::string origin;  // the checkpoint's log origin
  // With commit.held_out_sha256: the seq of the bundle's reveal, when the receipt proves one
  // (none: the held-out tests were not revealed when the receipt was made).
  std::optional<uint64_t> held_out_reveal_seq;
};

// Offline: the DSSE signature, the statement's shape and every field against the bundled
// record, the record's leaf hash, its inclusion proof against the checkpoint's root, and
// the checkpoint's signature, all under `key`. Any failure is verification_failed and
// names the part that failed.
Result<VerifiedReceipt> verify_receipt(const Json& bundle, const NoteVerifier& key);

}  // namespace warden::kernel
