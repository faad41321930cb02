// What an auditor runs offline: `warden replay`. First the ledger's own integrity (hash
// chain, Merkle tree, checkpoint signatures and the unsigned tail, kept checkpoints, blobs
// and every blob a record refers to) with ledger/verify.h; then the kernel's
// decisions, recomputed from the recorded inputs and compared with what was recorded:
//   - every record of a kind the kernel writes reads back as its type (kernel/record/records.h);
//   - every policy record re-hashes to its digest;
//   - every generated plan is generated again from its blueprint, every plan verdict
//     (commit or PLANNING_ERROR refusal) is recomputed with verify_plan();
//   - every decision is recomputed with decide() from the committed plan, the recorded
//     policy, the proposal evidence blob, the recorded run result, the base's test run (which
//     must be of the tree the step built on), the oracle run (the proposal without the tests
//     it adds, oracle_run.h; decide() holds its diff), and the completed steps re-derived from the
//     run's earlier commit records (not from the decision's own claim);
//   - every output body, report and artifact a run result names is in the blob store;
//   - every commit record confirms the commit intent recorded before it (write-ahead: the
//     intent is durable before the branch moves), which follows an accepted decision of the
//     same step and attempt and names the same digests; with a repository, the commit exists
//     with that tree;
//   - with a repository, every branch the ledger's runs moved is at the last commit the
//     ledger confirmed for it (or at an unconfirmed intent's commit, a warning): a branch
//     moved behind Warden's back is a problem named at the record that last moved it.
// With `rerun`, each recorded run result is produced again by the runner in the sandbox and
// its deterministic digest compared. The first difference names its record.
//
// What it writes: the ledger is opened read-only; an export is first imported into a
// temporary directory (removed afterwards). With `rerun`, replay writes git objects into
// `repo` (the re-derived trees, never a reference) and runs the sandbox with base checkouts
// and a result store under `cache_dir` (cached results are not used). Replay keeps no state
// between calls; one call drives one replay on the calling thread (ledger verification
// hashes on worker threads of its own).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "ledger/note.h"
#include "ledger/verify.h"

namespace warden::kernel {

struct ReplayOptions {
  // The integrity stage's keys (empty: the ledger's own, reported as weaker), unsigned-tail
  // policy and kept checkpoints (ledger/verify.h). Replay checks blob references with the
  // kernel's table (blob_refs.h) whatever `verify.blob_references` holds.
  VerifyOptions verify;
  std::optional<std::filesystem::path> repo;    // for commit checks and --rerun
  // Instead of `repo`, a directory of repositories (a server's STATE/repos: one per
  // repository name its runs were started with): each run is checked against the one that
  // holds its base tree, and each branch in the repository of the runs that moved it.
  std::optional<std::filesystem::path> repos;
  bool rerun = false;
  std::filesystem::path cache_dir;              // the runner's, for --rerun
  // For --rerun of runs whose checks ran in an environment: where it is found (or built
  // again from the recorded recipe); empty, the default store.
  std::filesystem::path env_store;
  // A recorded environment the store lacks is built again from the ledger's recipe only when
  // asked: its prepare steps are the ledger author's commands and run with network.
  bool rebuild_environments = false;
};

struct ReplayProblem {
  uint64_t seq = 0;
  std::string kind;
  std::string message;
};

struct ReplayReport {
  uint64_t records = 0;
  uint64_t runs = 0, plans = 0, decisions = 0, commits = 0, reruns = 0;
  uint64_t branches = 0;  // with a repository: branches held to the ledger's last commit
  // Decisions that rest on held-out results (held_out.h) whose bundle is not revealed yet:
  // re-derived from the count the kernel recorded, which nothing can check before the reveal.
  uint64_t pending_reveal = 0;
  uint64_t revealed = 0;  // decisions whose held-out result was revealed and checked
  std::string root_hex;
  std::string key_source;
  uint64_t signed_size = 0, unsigned_records = 0;  // as ledger verification found them
  std::vector<std::string> warnings;
  std::optional<ReplayProblem> problem;  // the first difference
  bool ok() const { return !problem.has_value(); }
};

// `path` is a ledger directory or an export. Errors are for what stops replay from starting
// (unreadable input); differences are in the report. A ReplayProblem means the recorded
// decisions cannot be trusted from that record on. Note that with `rerun`, a failure of this
// host to rerun (no sandbox, a missing policy program) is also reported as a problem.
Result<ReplayReport> replay(const std::filesystem::path& path, const ReplayOptions& options);

}  // namespace warden::kernel
