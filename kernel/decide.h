// The kernel's decision: a pure function of recorded inputs. Given the committed plan, the
// steps already completed, a proposal (the Diff as the executor sent it, plus the pre-images
// of every path it reads, as the kernel read them from the base tree), the runner's result
// and the policy, it returns the same Verdict byte for byte every time — at build time and
// again in `warden replay`. It re-derives everything it can: the diff hash, every file's
// before/after hash (by re-applying the hunks to the recorded pre-images), path rules and
// the dangerous-operation scan over added lines. Durations never enter.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/canonical_json.h"
#include "kernel/build_plan.h"
#include "kernel/policy.h"
#include "kernel/verdict.h"
#include "common/refusal.h"
#include "runner/run_result.h"

namespace warden::kernel {

// A path's content in the base tree; nullopt content: the path does not exist there.
struct BaseFileImage {
  std::optional<std::string> content;
  uint32_t mode = 0100644;
  bool operator==(const BaseFileImage&) const = default;
};

struct ProposalEvidence {
  std::string step_id;                       // the step the executor says it implements
  Json diff;                                 // the Diff JSON as received (diff.h), untrusted
  std::map<std::string, BaseFileImage> base; // every path the diff names (path and old_path)
  // What applying the diff to the real base tree said (structural rules that need the whole
  // tree: case collisions, symlinked parents, file/directory clashes). None: it applied.
  std::optional<Refusal> workspace_refusal;

  Json to_json() const;  // base contents as base64 when not UTF-8
  static Result<ProposalEvidence> from_json(const Json& json);
};

struct DecisionInput {
  const BuildPlan& plan;
  const std::set<std::string>& completed_steps;
  const ProposalEvidence& proposal;
  const RunResult* run = nullptr;  // none: the proposal never reached the runner
  const Policy& policy;
};

Verdict decide(const DecisionInput& input);

}  // namespace warden::kernel
