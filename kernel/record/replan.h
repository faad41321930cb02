// Replanning: when a step runs out of retries, the executor may propose a replacement plan
// (at most plan.max_replans times per run). The executor proposes steps only: what the run
// is bound by stays the kernel's. The replacement is verified and committed like any plan
// (plan_commit.h); one that is not even a plan is refused with PLANNING_ERROR and its text
// kept as evidence.
#pragma once

#include <set>
#include <string>

#include "kernel/plan/build_plan.h"
#include "kernel/record/run_recorder.h"

namespace warden::kernel {

// The request the executor gets: the plan, the failed step, what is done, why it failed.
Json replan_request(const BuildPlan& plan, const std::string& failed_step, const std::set<std::string>& completed,
                    const Json& refusals);

// Overwrites in `replacement` everything the run is bound by with `current`'s: the branch,
// the bounds, the allowed paths, the intent, the invariants, the checks, and a final
// verification checkpoint over every step of the new plan.
void keep_kernel_fields(const BuildPlan& current, BuildPlan& replacement);

// Records the refusal of a replacement plan that does not parse (its text in the blob
// store). The caller ends the run with PLANNING_ERROR.
Status record_unreadable_plan(RunRecorder& rec, const std::string& text, const std::string& why);

}  // namespace warden::kernel
