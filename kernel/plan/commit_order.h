// The order in which a plan's commits land on its branch: a topological order of the steps'
// dependencies that, among the steps ready, always takes the one first in the plan. It is a
// function of the plan alone, so a merge queue (merge_queue.h) that runs steps in parallel
// still commits them in one order, the same on every run; for a plan already in dependency
// order it is the plan's own order.
#pragma once

#include <cstddef>
#include <vector>

#include "kernel/plan/build_plan.h"

namespace warden::kernel {

// Indexes into plan.steps. A dependency naming no step is ignored, and steps caught in a
// cycle come last in plan order: plan_verify.h refuses both, so a committed plan has neither.
std::vector<size_t> commit_order(const BuildPlan& plan);

}  // namespace warden::kernel
