#include "kernel/judge/step_checks.h"

#include <algorithm>

namespace warden::kernel {

std::vector<CheckSpec> checks_for_step(const BuildPlan& plan, const Policy& policy, const BuildStep& step,
                                       const std::set<std::string>& completed_steps) {
  std::vector<CheckSpec> checks = policy.checks;
  std::set<std::string> names;
  for (const auto& c : checks) names.insert(c.name);
  for (const auto& c : plan.checks) {
    // A plan's check never speaks for an invariant: that is the policy's programs' job.
    if (c.name.starts_with("invariant:") || !c.proves.empty()) continue;
    if (names.insert(c.name).second) checks.push_back(c);
  }
  std::set<std::string> invariants(plan.invariants.begin(), plan.invariants.end());
  invariants.insert(step.invariants.begin(), step.invariants.end());
  std::set<std::string> done = completed_steps;
  done.insert(step.id);
  for (const auto& cp : plan.verification_checkpoints) {
    bool complete = std::all_of(cp.after.begin(), cp.after.end(), [&](const std::string& id) { return done.contains(id); });
    if (complete) invariants.insert(cp.invariants.begin(), cp.invariants.end());
  }
  for (const auto& name : invariants) {
    if (auto spec = policy.invariant_check(name); spec && names.insert(spec->name).second) checks.push_back(*spec);
  }
  return checks;
}

}  // namespace warden::kernel
