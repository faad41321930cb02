// `warden propose`: one proposal (a Diff JSON or a git patch) judged against an existing
// repository by that repository's own checks. It is the build loop with a one-step plan —
// a `modify` step whose targets are the paths the proposal touches and whose checks are the
// given commands — so the proposal gets everything a build step gets: the sandboxed run,
// decide(), a commit with trailers on the branch when accepted, and every record in the
// ledger either way.
//
// Without a policy, the checks must pass, .git/** and .warden/** are protected, the oracle's
// built-in defaults hold (oracle.h: the tests, their runner's hooks and the test sections of
// build files come from the base), every test the base passed must still pass (the kernel
// runs the base's tests itself), and the kernel's dangerous-operation scan runs its safety
// rules (no lint rules such as C's sprintf) on what the change introduces; nothing else is
// assumed about the project.
//
// The oracle is closed to a proposal: its one step is a `modify` step whose targets come from
// the proposal itself, so they cannot vouch for a change to a test. There is deliberately no
// flag that opens it: a test change is made by a person (a commit of their own), by a build
// plan's create_test step, or under a policy file whose "oracle" leaves the file out — each
// of them reviewed before the proposal, and the policy recorded in the ledger with it.
//
// Errors (std::expected) are refusals before anything is recorded: the proposal is neither
// a Diff nor a patch, nothing would judge it, the branch cannot take it, the repository or
// ledger cannot be opened. Everything about the proposal itself is in the outcome.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernel/build/build_loop.h"
#include "kernel/plan/held_out.h"
#include "kernel/judge/policy.h"
#include "kernel/build/session.h"
#include "runner/model/check_spec.h"

namespace warden::kernel {

struct ProposeRequest {
  std::string proposal;     // the bytes: a Diff JSON, or a git patch / unified diff
  std::string source;       // the file it came from, as given: errors name it, the step and executor its file name
  std::filesystem::path repo;
  std::string base;                 // the revision the proposal applies to
  std::vector<CheckSpec> checks;    // the repository's own checks (may be empty with a policy)
  std::optional<Policy> policy;     // none: the permissive policy over `checks`
  std::vector<std::string> oracle;  // globs added to the policy's oracle paths (--oracle), recorded with it
  std::vector<std::string> approvers;  // verifier keys added to the policy's approvers (--approver), recorded with it
  // The environment the checks run in (--environment: a digest or a recipe file,
  // run_environment.h), recorded with the policy; empty: the policy's, else the host's /usr.
  std::string environment;
  std::vector<Json> approvals;         // signed approvals (approval.h, --approval), recorded in the plan's step
  // Held-out checks (held_out.h, --held-out): the bundle, its salt drawn, and the checks that
  // run it. The plan commits to its digest; the bundle is sealed in the vault beside the ledger
  // before the run and stays there until its owner reveals it (reveal_held_out()).
  std::optional<HeldOutBundle> held_out;
  std::vector<CheckSpec> held_out_checks;
  std::filesystem::path ledger;     // empty: <repo>/.git/warden-ledger
  // Where the accepted commit goes; empty: propose_branch(), a branch of the proposal's own,
  // so each proposal on a repository lands beside the others instead of on top of the last.
  std::string branch;
  std::string step_id;              // empty: the Diff's own step id, else "propose"
  std::optional<int64_t> step_timeout_ms;
  std::string run_id;
  // Sandbox runs at once: the base's run, the proposal's and the oracle run go together where
  // there are cores (the plan is a merge queue of depth 1, so what is recorded never depends
  // on it). 0: three, all of them.
  int jobs = 0;
};

struct ProposeOutcome {
  BuildSummary summary;  // the run; its last verdict is the proposal's
  std::filesystem::path ledger;
  std::string base_commit, base_tree;  // what --base resolved to when the run began
  // What each check's verdict rests on: "tests" (it reports test ids, so PASS_TO_PASS and the
  // oracle run hold) or "exit_status" (no report: its exit status alone). Its spec, and so
  // its report format, is in the ledger with the plan or policy.
  std::map<std::string, std::string> oracle;
  std::optional<Digest> held_out = std::nullopt;  // the held-out bundle the proposal was judged by, sealed
  bool accepted() const { return summary.status == RunStatus::completed; }
  // A decision that refused it: the run failed because of it, not of an error.
  bool refused() const { return summary.status == RunStatus::refused && verdict() && !verdict()->accepted; }
  // The decision, every reason with its detail; none when the run ended before one.
  const Verdict* verdict() const { return summary.verdicts.empty() ? nullptr : &summary.verdicts.back().verdict; }
  // The decision as `warden propose --json` reports it:
  //   {"decision": "accepted" | "refused" | "undecided", "accepted", "status", "run_id", "step_id",
  //    "base_commit", "base_tree", "branch"/"commit"/"tree" (accepted only: the branch moved),
  //    "refusal": {"codes", "reasons", "report", "checks_not_passing"?} (refused only),
  //    "error_type"/"error" (undecided only: a timeout, a cancellation, an execution error),
  //    "ledger", "ledger_size", "root", "checkpoint", "plan_sha256", "policy_sha256",
//    "oracle": {"check1": "tests" | "exit_status"}, "held_out": "sha256:..." (with held-out checks)}
  Json to_json() const;
};

// The ledger a proposal is recorded in: `request.ledger`, else <repo>/.git/warden-ledger.
// The request's branch, or when none is given "warden/propose-" and the first 12 hex of the
// SHA-256 of the proposal's bytes: the same proposal again finds its own branch, another gets
// one of its own.
std::string propose_branch(const ProposeRequest& r);

Result<std::filesystem::path> propose_ledger_dir(const ProposeRequest& request);

// Everything propose() refuses before it records anything: the proposal is neither a Diff
// nor a patch (or changes nothing), nothing would judge it, there is no ledger directory,
// the branch cannot take the commit. Callers may ask first (before creating keys).
Status check_proposal(const ProposeRequest& request);

Result<ProposeOutcome> propose(const ProposeRequest& request, KernelSession& session);

}  // namespace warden::kernel
