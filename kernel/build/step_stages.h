// The four stages of a build step, as functions over an Attempt (attempt.h):
//   propose     ask the executor, parse what it sent once, read the pre-images, record it
//   run_checks  apply the diff on the branch tip and run the step's checks on the runner
//   verify      decide() on the recorded evidence; a refusal is recorded and reported to
//               the executor (durably first)
//   commit      the accepted change as a git commit on the plan's branch, then its record
// Each stage records what it did through the RunRecorder and returns its result; an Error
// means the stage itself failed (the ledger, the repository, the sandbox, a stop request),
// which ends the step as an execution error — a refusal is a result, not an error. The
// build loop (build_step.cc, one step; build_queue.cc, a parallel plan's rounds) drives the stages on the pipeline executor.
#pragma once

#include <chrono>
#include <set>
#include <stop_token>
#include <string>

#include "executor/proposer.h"
#include "kernel/build/attempt.h"
#include "kernel/plan/build_plan.h"
#include "kernel/plan/held_out.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/judge/policy.h"
#include "kernel/record/run_recorder.h"
#include "kernel/judge/verdict.h"
#include "kernel/build/work_ticker.h"
#include "runner/check/runner.h"
#include "runner/workspace/workspace.h"

namespace warden::kernel {

// What a step's stages work with. The references outlive the step; the plan, the completed
// steps and the head only change between steps.
struct StepContext {
  RunRecorder& rec;
  Workspace& workspace;
  Runner& runner;
  executor::Proposer& proposer;
  const BuildPlan& plan;
  const Policy& policy;
  const BuildStep& step;
  int64_t index = 0;  // the step's position in the plan (events name it)
  const std::set<std::string>& completed;
  const ObjectId& head;        // the branch tip the step builds on
  const ObjectId& start_tree;  // the run's base: trees under test are layered over it
  // The accepted run that made `head` (none at the run's start): when it ran the same test
  // checks, it is the step's base run and nothing runs twice.
  const BaseRun* previous_run = nullptr;
  const Digest& plan_sha256;
  const Digest& policy_sha256;
  const Json& refusals;  // this step's earlier refusal reports, for the executor
  std::stop_token stop;  // the step's: its watchdog or the run's cancellation
  std::function<std::chrono::milliseconds()> time_left;  // the watchdog's remaining budget
  const WorkingListener& on_working;                     // the session's, for long waits
  // The plan's held-out bundle, opened from the vault it is sealed in, when the plan holds
  // held-out checks (held_out.h); each proposal that runs is also run with it laid over it.
  const HeldOutBundle* held_out = nullptr;
  const HeldOutVault* vault = nullptr;
  // Runs the held-out run instead of `runner` when set (the checks run on remote runners,
  // which are never given the bundle).
  Runner* held_out_runner = nullptr;
};

Result<Proposed> propose(const StepContext& ctx, int64_t number);
// propose() in its parts, for the merge queue (merge_queue.h), which asks the executor on a
// worker thread and records the answer only when the step reaches the front of the queue:
//   proposal_request   what the executor is shown: the step's targets as the head has them
//   announce_proposal  the tool_called event
//   read_answer        the answer as a Diff, a patch read against the head it was shown on
//   record_proposal    the pre-images from the head at the time, and the proposal record
struct Answer {
  ProposalEvidence evidence;  // the diff as received and what refused it; no pre-images yet
  std::optional<Diff> diff;
  std::optional<std::string> error;     // why it is not a Diff, or why the executor failed
  std::optional<std::string> identity;  // Proposer::answered_by()
};
executor::ProposalRequest proposal_request(const StepContext& ctx, int64_t number);
// `again`: the same attempt asked once more (a merge queue's stale proposal), said in the event.
void announce_proposal(const StepContext& ctx, int64_t number, bool again = false);
Answer read_answer(const StepContext& ctx, const Checked<std::string>& text, std::optional<std::string> identity);
Result<Proposed> record_proposal(const StepContext& ctx, int64_t number, Answer answer);
// The files a diff names, as `tree` has them, into evidence.base (the pre-images decide() judges).
void read_pre_images(GitTree& tree, const Diff& diff, ProposalEvidence& evidence);
// The checks that report tests: the ones whose tests a proposal must keep passing.
std::vector<CheckSpec> test_checks(const std::vector<CheckSpec>& checks);
// Whether `run` holds every check of `wanted`, with the same spec.
bool covers(const RunResult& run, const std::vector<CheckSpec>& wanted);

// None: the proposal is not a Diff or the workspace refused it; the checks did not run.
// The first call of a step also tests the step's base (into `base`, recorded), when a check
// reports tests; later attempts reuse it.
Result<std::optional<Tested>> run_checks(const StepContext& ctx, const Proposed& proposed, std::optional<BaseRun>& base);
// On refusal, also records the RefusalReport, flushes, and tells the executor (learn); the
// report is returned for the next proposal's context.
struct Verified {
  Decided decided;
  std::optional<RefusalReport> refusal_report;
};
Result<Verified> verify(const StepContext& ctx, const Proposed& proposed, const Tested* tested, const BaseRun* base);
Result<Committed> commit(const StepContext& ctx, const Attempt& attempt);

}  // namespace warden::kernel
