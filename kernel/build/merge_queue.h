// The merge queue: how the build loop runs a plan that sets merge_queue_depth. Steps are
// proposed and checked in parallel, and still land on the branch one by one in commit order
// (commit_order.h), each commit checked on exactly the tree it creates — the guarantee a
// naive parallel build loses when it tests s3 without s2 and commits both.
//
// It works in rounds. A round takes the queue's window: the steps not yet committed, in
// commit order, up to the first whose dependencies are not all committed, at most `depth`
// of them.
//   ask        every step of the window without a proposal is asked for one, all at once
//              (Proposer::concurrent()), each shown the branch's head
//   speculate  the proposals are layered in commit order: each step's tree is its diff on the
//              tree of every step ahead of it, assuming they will be accepted; every run the
//              decisions will need (the checks on that tree, its base's tests, the oracle
//              run) is started on the runner pool (runner/check/prefetching_runner.h)
//   settle     in commit order, each step goes through the sequential build's own stages
//              (step_stages.h) — proposal, runs, decide(), commit — taking its prefetched
//              runs; the first refusal stops the round. Every speculation built on it is
//              thrown away and recorded (SpeculationRecord); the later steps keep their
//              proposals and are checked again next round on the corrected tree. A proposal
//              whose files a step committed ahead of it changed is proposed again with the
//              new context (not counted as an attempt).
// Everything recorded is recorded in the round's settle, in commit order, from the build's
// thread; what a round asks and runs depends only on the proposals and results before it.
// So the ledger does not depend on timing or on the number of jobs, and replay reads it as
// it reads a sequential build's.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "executor/proposer.h"
#include "kernel/build/attempt.h"
#include "kernel/build/build_loop.h"
#include "kernel/plan/build_plan.h"
#include "kernel/plan/held_out.h"
#include "kernel/judge/held_out_vault.h"
#include "kernel/judge/policy.h"
#include "kernel/record/run_recorder.h"
#include "kernel/build/work_ticker.h"
#include "runner/check/prefetching_runner.h"
#include "runner/workspace/workspace.h"

namespace warden::kernel {

// What the queue works on, lent by the build loop for one committed plan. The queue moves
// head, completed, previous_run, refusals, verdicts and steps_completed as steps land.
struct QueueSite {
  RunRecorder& rec;
  Workspace& workspace;
  PrefetchingRunner& runner;
  executor::Proposer& proposer;
  const BuildPlan& plan;
  const Policy& policy;
  const Digest& plan_sha256;
  const Digest& policy_sha256;
  const ObjectId& start_tree;
  std::set<std::string>& completed;
  ObjectId& head;
  std::optional<BaseRun>& previous_run;
  Json& refusals;
  std::vector<AttemptVerdict>& verdicts;
  int64_t& steps_completed;
  const std::vector<std::string>& replan_events;
  std::stop_token stop;  // the run's cancellation
  int64_t step_budget_ms = 30000;
  int jobs = 1;          // concurrent proposals (sandbox runs are bounded by the runner's workers)
  const WorkingListener& on_working;
  const HeldOutBundle* held_out = nullptr;  // the plan's held-out bundle, open (step_stages.h)
  const HeldOutVault* vault = nullptr;
  Runner* held_out_runner = nullptr;  // StepContext::held_out_runner
};

enum class QueueEnd { done, exhausted, timeout, cancelled, failed };

struct QueueOutcome {
  QueueEnd end = QueueEnd::done;
  std::string step_id;  // the step it ended at (all but done)
  int64_t step_index = 0;
  int64_t attempts = 0;  // that step's proposals
  std::string error;     // timeout, cancelled, failed
};

// Runs rounds until every step is committed or the queue ends at a step. Errors are the
// infrastructure's (the ledger, the repository); every other end is in the outcome, with
// its step's evidence recorded, for the build loop to end the run (or replan) with.
Result<QueueOutcome> run_merge_queue(QueueSite& site);

}  // namespace warden::kernel
