// Plan verification: what the kernel checks before it commits a plan (generated or proposed
// by an executor). Every problem is reported, sorted by code with no duplicates; an empty
// list means the plan may be committed. A refused plan is a PLANNING_ERROR. Codes:
//   plan_empty                          no steps
//   plan_duplicate_step:<id>            two steps share an id
//   plan_invalid_step:<id>              a malformed step: bad id, no targets or a target twice,
//                                       create_function without symbols, add_dependency with
//                                       other than one target, content/draft keys not its targets
//   plan_dependency_missing:<from>-><id> a step (or checkpoint) names a step that is not there
//   plan_dependency_cycle:<a>-><b>->..-><a> rotated to start at its smallest id
//   plan_invalid_target:<path>          not a safe relative path (path_safety.h)
//   plan_target_not_allowed:<path>      outside the plan's and the policy's allow globs, or denied
//   plan_unknown_invariant:<name>       plan, step or checkpoint invariant the policy does not know
//   plan_missing_artifact:<type>        an intent artifact no step produces
//   plan_unknown_check:<name>           a checkpoint names a check neither plan nor policy has
#pragma once

#include <vector>

#include "kernel/plan/build_plan.h"
#include "kernel/judge/policy.h"
#include "kernel/judge/verdict.h"

namespace warden::kernel {

std::vector<Reason> verify_plan(const BuildPlan& plan, const Policy& policy);

}  // namespace warden::kernel
