// Runner: what the kernel asks of whoever evaluates a proposal — "run these checks on this
// base + diff (or this tree), give me a RunResult". It is the seam between the authority
// (the kernel decides) and the evaluator (the runner only reports), in the spirit of Ninja's
// CommandRunner: LocalRunner (local_runner.h) runs the checks in a bubblewrap sandbox on this
// host; a remote runner or the parallel engine are other implementations, and kernel tests
// may use a fake.
//
// Nothing a runner returns is trusted by the kernel: decide() re-derives what it can and
// judges the rest as evidence. A Refusal means the request could not be evaluated (the diff
// does not apply, the sandbox is unavailable, the repository failed, the run was stopped);
// a check that fails is a RunResult, not an error. Implementations say whether they are
// thread-safe; none promised here.
#pragma once

#include <optional>
#include <stop_token>
#include <vector>

#include "common/sha256.h"
#include "diff/diff.h"
#include "common/refusal.h"
#include "runner/model/check_spec.h"
#include "runner/workspace/git_repo.h"
#include "runner/check/remote_run.h"
#include "runner/model/run_result.h"

namespace warden {

// A file laid over the tree under test that is in no git object (a held-out bundle's).
struct OverlayFile {
  std::string path;  // tree-relative, '/'-separated
  uint32_t mode = 0100644;
  std::string content;
};

struct RunRequest {
  ObjectId base_tree;
  std::optional<ObjectId> tree;  // the tree under test, when the caller already built it
  const Diff* diff = nullptr;    // otherwise a diff to apply to base_tree (none: test the base)
  std::vector<CheckSpec> checks;
  std::stop_token stop;  // cancels the run: running checks are killed, the rest do not start
  // A result recorded earlier for the same tree, checks, profile and toolchain will do (the
  // base run every proposal is compared with). Otherwise the runner's own default holds.
  bool reuse = false;
  // A held-out run (kernel/plan/held_out.h): files laid over the tree under test that the executor
  // must not see. They never enter the repository's objects; the result is never read from or
  // written to a cache; only this host's sandbox runs it. RunResult::tree stays the git tree's.
  std::vector<OverlayFile> overlay = {};
  bool sealed() const { return !overlay.empty(); }
};

// A cached base checkout made by an earlier process that failed its verification and was
// discarded and rebuilt (base_checkout.h): the runner's cache was tampered with or torn.
struct DiscardedCheckout {
  std::string tree;    // the git tree id it held
  std::string reason;  // what failed
};

struct RunOutcome {
  RunResult result;
  RunBodies bodies;  // every blob the result names, for the caller's blob store
  bool cache_hit = false;
  Digest cache_key;
  // For the caller to record and show; never part of the result (a run is the same run
  // whether its base checkout was rebuilt or not).
  std::vector<DiscardedCheckout> discarded_checkouts;
  // Runners on other machines ran it (runner/check/channel_runner.h): who, and each one's signature
  // over the result (several when a quorum agreed on it), recorded with it so an auditor can
  // check them offline. Empty for this host's own sandbox.
  std::vector<ResultAttestation> attestations;
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Evaluates `request` against objects read from `repo` (the base tree, the tree under
  // test); the repository is only read.
  virtual Checked<RunOutcome> run(GitRepo& repo, const RunRequest& request) = 0;
  // Whether run() may be called from several threads at once (each with its own GitRepo).
  virtual bool concurrent() const { return false; }
};

}  // namespace warden
