// Deterministic BuildPlan generation: the same blueprint and policy always give the same plan,
// byte for byte. Steps come in a fixed order, ids "s1".."sN":
//   add_dependency  one per dependency; target = its manifest; symbols = [name]; produces dependency
//   create_module   one per module; produces module
//   create_function one per function entry; depends on its module's step; symbols = its names;
//                   produces function
//   create_test     one per test; depends on the steps defining every function it covers;
//                   no symbols (the name is the suite's); produces test_suite
//   modify          one per change; depends on the steps writing the paths in `after`;
//                   produces [change.produces] or nothing
// Every step also depends on the latest earlier step with the same target (two dependencies
// in one manifest, a change to a created file), so no two steps race on a file.
// content = {path: content}, drafts = [{path: draft}...].
// Invariants: the policy's invariants minus its checkpoint_invariants are the plan's (proven
// after every step); the checkpoint ones go to the single checkpoint "final", after every
// step, which also names every check (the plan's and the policy's required ones).
// Checks: the blueprint's own; the kernel adds the policy's at run time.
// Held-out checks: the blueprint's, committed to `held_out`, the digest of the bundle the
// build sealed from the blueprint's directory (its salt is random, so the digest is an input,
// not derived); revealed when the run ends. Given exactly when the blueprint has them.
#pragma once

#include <optional>
#include <string>

#include "common/error.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/build_plan.h"
#include "kernel/judge/policy.h"

namespace warden::kernel {

// The policy a blueprint asks for: its `policy` field, else its language's default;
// an error for a language with no default.
Result<std::string> blueprint_policy(const BlueprintSpec& blueprint);

Result<BuildPlan> generate_plan(const BlueprintSpec& blueprint, const Policy& policy,
                                const std::optional<Digest>& held_out = std::nullopt);

}  // namespace warden::kernel
