// The kernel's decision: a pure function of recorded inputs. Given the committed plan, the
// steps already completed, a proposal (the Diff as the executor sent it, plus the pre-images
// of every path it reads, as the kernel read them from the base tree), the runner's result
// and the policy, it returns the same Verdict byte for byte every time — at build time and
// again in `warden replay`. It re-derives everything it can: the diff hash, every file's
// before/after hash (by re-applying the hunks to the recorded pre-images), path rules and
// the dangerous-operation scan over what the change introduces, .gitattributes lines that would
// make a checkout differ from the tested bytes (checkout_attributes.h), the oracle (oracle.h: test
// files and hooks by path, shared build files by their test sections, pre-image against
// post-image), and which tests the base passed that the proposal lost. Durations never enter.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/canonical_json.h"
#include "kernel/plan/build_plan.h"
#include "kernel/judge/proposal_evidence.h"
#include "kernel/judge/policy.h"
#include "kernel/judge/verdict.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

struct DecisionInput {
  const BuildPlan& plan;
  const std::set<std::string>& completed_steps;
  const ProposalEvidence& proposal;
  const RunResult* run = nullptr;  // none: the proposal never reached the runner
  const Policy& policy;
  // The checks that report tests, run on the tree the step builds on: every test that passed
  // there must exist and pass in `run` (PASS_TO_PASS, derived here, never taken from a
  // proposal). None: no check of the run reports tests, or the proposal never ran.
  const RunResult* base_run = nullptr;
  // The test checks on the proposal without the tests and hooks it adds (oracle_run.h):
  // required, and held to the base's passing tests too, when it adds any.
  const RunResult* oracle_run = nullptr;
  // The held-out run (held_out.h), when the plan holds held-out checks: whether every held-out
  // test passed, as the kernel judged the sealed result (held_out_run record). None: it did not
  // run. decide() sees no more than the executor does; replay holds it to the result once the
  // bundle is revealed.
  std::optional<bool> held_out_passed = std::nullopt;
};

Verdict decide(const DecisionInput& input);

}  // namespace warden::kernel
