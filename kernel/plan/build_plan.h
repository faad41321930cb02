// The BuildPlan: the ordered steps the kernel holds executors to. A plan is a proposal until
// plan_verify.h accepts it and the kernel commits it to the ledger; from then on every Diff
// names one of its steps. JSON form, format "warden.plan/v1":
//   {"format": "warden.plan/v1", "name": "calculator", "blueprint_sha256": "sha256:...",
//    "language": "python", "policy": "python", "branch": "warden/calculator",
//    "intent": {...} | null, "allowed_paths": [...],
//    "steps": [{"id": "s1", "action": "create_module", "description": "...",
//               "targets": ["src/calculator/__init__.py"],
//               "content": {"src/calculator/__init__.py": "..."},   // optional
//               "drafts": [{"src/...": "..."}],                       // optional
//               "symbols": ["add"], "dependencies": ["s0"], "invariants": ["no_import_cycles"],
//               "produces": ["module"]}],
//    "invariants": ["no_dangerous_operations"], "checks": [CheckSpec...],
//    "verification_checkpoints": [{"id": "final", "after": ["s1", "s2"], "checks": ["tests"],
//                                  "invariants": ["all_functions_have_tests"]}],
//    "max_retries": 3, "max_replans": 1, "step_timeout_ms": 30000, "merge_queue_depth": 8,
//    "held_out": {"sha256": "sha256:...", "at": "held_out", "checks": [CheckSpec...]}}   // optional
//
// BuildPlan and BuildStep are plain values, safe to share read-only; find() returns a pointer
// into `steps`, valid while the plan is alive and unchanged. from_json() checks the shape
// only (an Error names the JSON path: the plan text is malformed); whether a plan is
// acceptable for its blueprint and policy is plan_verify.h's question.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"
#include "kernel/plan/blueprint.h"
#include "kernel/plan/held_out.h"
#include "runner/model/check_spec.h"

namespace warden::kernel {

inline constexpr std::string_view kPlanFormat = "warden.plan/v1";
// The most steps a plan may have: far beyond any real build, and a bound on what checking
// and replaying an executor's plan can cost.
inline constexpr size_t kMaxPlanSteps = 10'000;

enum class StepAction { create_module, create_function, create_test, add_dependency, modify };
std::string_view step_action_name(StepAction action);
std::optional<StepAction> parse_step_action(std::string_view name);

using FileContents = std::map<std::string, std::string>;  // path -> exact bytes

struct BuildStep {
  std::string id;
  StepAction action = StepAction::modify;
  std::string description;
  std::vector<std::string> targets;      // the only paths the step may touch
  std::optional<FileContents> content;   // exact post-images, when the plan fixes them
  std::vector<FileContents> drafts;      // plan executor rehearsals, proposed before content
  std::vector<std::string> symbols;      // create_function: functions it must define; create_test: tests
  std::vector<std::string> dependencies; // step ids that must be completed first
  std::vector<std::string> invariants;   // step-level invariants, on top of the plan's
  std::vector<std::string> produces;     // artifact types (module, test_suite, document, binary, dependency)
  // Test ids (globs, glob.h) that passed on the step's base and may be missing or failing
  // after it: the plan says so in advance; a proposal never can.
  std::vector<std::string> removes_tests;
  // Signed approvals (approval.h) admitting changes to named base tests for one proposal of
  // this step; decide() verifies each against the policy's approvers and the diff.
  std::vector<Json> approvals;

  Json to_json() const;  // as it stands in the plan's "steps"
};

// A gate on the whole tree once a set of steps is done: the proposal that completes the last of
// `after` must also pass these checks and prove these invariants. Invariants that cannot hold
// part-way (every function has a test) belong here rather than in the per-step list.
struct VerificationCheckpoint {
  std::string id;
  std::vector<std::string> after;       // step ids
  std::vector<std::string> checks;      // check names that must pass once those steps are done
  std::vector<std::string> invariants;  // invariants that must be proven then
};

struct BuildPlan {
  std::string name;
  std::optional<Digest> blueprint_sha256;
  std::string language;
  std::string policy;
  std::string branch;
  std::optional<Intent> intent;
  std::vector<std::string> allowed_paths;
  std::vector<BuildStep> steps;
  std::vector<std::string> invariants;
  std::vector<CheckSpec> checks;
  std::vector<VerificationCheckpoint> verification_checkpoints;
  int64_t max_retries = 3;
  int64_t max_replans = 1;
  int64_t step_timeout_ms = 30000;
  // Set: the steps run as a speculative merge queue (merge_queue.h) — up to this many ready
  // steps proposed and checked at once, each on the tree of every step ahead of it in commit
  // order — instead of one after another. The depth is the plan's, not the command line's:
  // what the ledger records depends on it, and must not depend on how many jobs ran it.
  // JSON "merge_queue_depth", absent for a sequential plan (older plans keep their digest).
  std::optional<int64_t> merge_queue_depth;
  // Held-out checks (held_out.h): the bundle's digest, where it is laid and the checks that run
  // it, required of every proposal; its files are in the kernel's vault, never in the plan.
  // JSON "held_out", absent when there are none.
  std::optional<HeldOutSpec> held_out;

  const BuildStep* find(std::string_view id) const;
  // Strict: unknown fields refused, errors name the JSON path ("plan.steps[2].action: ...").
  static Result<BuildPlan> from_json(const Json& json);
  Json to_json() const;
  Digest digest() const;  // of the canonical to_json()
};

}  // namespace warden::kernel
