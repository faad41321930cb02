// The build loop: the kernel's main job. Given a committed plan it walks the steps in order;
// for each it runs a small pipeline on the state-machine executor —
//   propose (the executor's Diff) -> run (the sandboxed checks) -> verify (decide()) ->
//   commit (git commit with trailers + ledger record), or back to propose with the refusal,
// at most max_retries proposals per step (the pipeline's edge limit). A step that exhausts
// its retries may get a replacement plan from the executor (max_replans); past that the run
// fails with the refusals as evidence. The run follows the lifecycle of run_lifecycle.h,
// every run ends in a terminal state, and everything — blueprint, policy, plan, proposals,
// run results, decisions, refusals, commits, events, per-step evidence, artifacts — is in
// the ledger, flushed before anything outside it (the git branch, the next attempt)
// depends on it. A watchdog ends a step that runs past its budget (TIMEOUT_ERROR); a stop
// request cancels the run, killing its sandboxes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.h"
#include "executor/proposer.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "kernel/judge/check_evidence.h"
#include "kernel/judge/policy.h"
#include "kernel/record/run_lifecycle.h"
#include "kernel/record/run_recovery.h"
#include "kernel/build/session.h"
#include "kernel/judge/verdict.h"

namespace warden::kernel {

struct BuildOptions {
  std::filesystem::path repo_dir;    // created and seeded (blueprint.seed) when it is not a repository
  bool create_empty_repo = false;    // no seed: create repo_dir with an empty first commit when missing
  std::filesystem::path ledger_dir;  // created when missing
  std::filesystem::path blueprint_dir;  // where the blueprint's seed is resolved
  std::string policy;                   // overrides the blueprint's policy
  std::string environment;              // overrides the blueprint's (run_environment.h); relative to the cwd
  std::string base;                     // revision the run starts from (default: the blueprint's, else HEAD)
  std::optional<int64_t> step_timeout_ms;  // overrides the plan's watchdog budget
  std::string run_id;                      // empty: one from the session's IdSource
  // A merge-queue plan's concurrent proposals and sandbox runs (at least 1). It changes how
  // long a build takes, never what it records; a sequential plan ignores it.
  int jobs = 1;
};

// One decision of the run, as recorded: every reason with its detail.
struct AttemptVerdict {
  std::string step_id;
  int64_t attempt = 0;
  Verdict verdict;
  std::vector<CheckEvidence> checks_not_passing;  // from the attempt's run, when it ran
  std::optional<RefusalReport> refusal_report;    // what the ledger's refusal record holds, for a refusal
};

struct BuildSummary {
  std::string run_id;
  RunStatus status = RunStatus::queued;
  std::optional<ErrorType> error_type;
  std::string error;
  int64_t steps_total = 0, steps_completed = 0, replans = 0;
  std::vector<AttemptVerdict> verdicts;
  std::string branch, commit, tree;  // the branch's tip after the run
  Digest plan_sha256, policy_sha256;
  uint64_t ledger_size = 0;
  std::string root_hex;
  std::string checkpoint;  // signed note at ledger_size
  std::vector<RecoveredRun> recovered;  // dead runs of the ledger whose end this build recorded first
  // The plan's held-out bundle (held_out.h), and the seq of the held_out_reveal record that
  // published it when the run ended.
  std::optional<Digest> held_out;
  std::optional<uint64_t> held_out_reveal_seq;
  // A merge-queue plan's jobs as run, and why fewer than asked (never recorded: the ledger
  // does not depend on them).
  int64_t jobs = 0;
  std::string jobs_note;
  Json to_json() const;
};

// A blueprint to a completed (or failed, timed out, cancelled) run, driven by `proposer`
// with the session's clock, ids, key, runner and cancellation. Errors are for the
// infrastructure only (the ledger or repository cannot be opened); everything about the
// build itself is in the summary and the ledger.
Result<BuildSummary> run_build(const BlueprintSpec& blueprint, const BuildOptions& options, KernelSession& session,
                               executor::Proposer& proposer);

// A plan someone already has (warden propose builds a one-step plan): verified, committed,
// then built like run_build's.
Result<BuildSummary> run_plan(const BuildPlan& plan, const Policy& policy, const BuildOptions& options,
                              KernelSession& session, executor::Proposer& proposer);

}  // namespace warden::kernel
