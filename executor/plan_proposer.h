// The plan executor: proposes each step's own content from the committed plan, so
// `warden build` runs with no AI at all. A step may carry drafts (earlier versions a
// blueprint rehearses); the plan executor proposes them first, one per attempt, and the
// step's content once the drafts are used up — which is how an example shows a refusal, the
// feedback and an accepted retry deterministically.
//
// PlanProposer keeps a refusal count per step, under a lock: propose() may run on several
// threads at once (a merge queue asking for several steps). It reads nothing but the request (no files, no processes). An error
// (invalid_argument) means the plan step itself has no usable content, so retrying the same
// step cannot help.
#pragma once

#include <map>
#include <mutex>

#include <cstdint>

#include "executor/proposer.h"

namespace warden::executor {

class PlanProposer final : public Proposer {
 public:
  std::string name() const override { return "plan"; }
  Checked<std::string> propose(const ProposalRequest& request) override;
  bool concurrent() const override { return true; }
  void learn(const Json& refusal) override;

 private:
  std::mutex mu_;
  std::map<std::string, int64_t> refusals_;  // guarded by mu_: per step id, its refusals so far
};

// The Diff JSON (diff/diff.h) that writes `files` (path -> content) over the current
// contents described by context["files"]: add for new paths, modify with full content
// otherwise. Shared by the plan executor and tests.
Result<Json> full_content_diff(std::string_view step_id, const Json& files, const Json& context);

}  // namespace warden::executor
