// Which checks a proposal for a step must run: the policy's own, the plan's, one per
// invariant of the plan and of the step, and the invariants of any verification checkpoint
// the step completes. The build loop asks the runner for exactly these, and replay --rerun
// asks again, so both derive them here.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "kernel/plan/build_plan.h"
#include "kernel/judge/policy.h"
#include "runner/model/check_spec.h"

namespace warden::kernel {

std::vector<CheckSpec> checks_for_step(const BuildPlan& plan, const Policy& policy, const BuildStep& step,
                                       const std::set<std::string>& completed_steps);

}  // namespace warden::kernel
