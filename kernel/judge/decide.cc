// decide(): every rule a proposal must pass, each adding its reasons; nothing stops at the
// first failure except an unknown step, which leaves nothing to check against.
//
// Choices worth knowing:
// - A diff whose own step_id differs from the proposal's is a content_mismatch (the diff
//   is not the content of the step it is proposed for).
// - The runner's diff refusals map onto reason codes by what they say about the proposal:
//   hash_mismatch, after_hash_mismatch, hunk_mismatch, hunk_count_mismatch and
//   mode_mismatch all mean the diff is not anchored to the base it names -> hash_mismatch;
//   path_* and symlink_escapes_tree -> path_not_allowed; anything else (duplicate_path,
//   malformed_diff, ...) -> malformed_diff. The runner's code is kept in the detail.
// - A patch that did not become a Diff against the base (proposal.patch_refusal) is refused
//   with that Refusal through the same mapping, so the detail is `warden diff parse`'s
//   message ("hunk_mismatch (a.c): hunk 1 ..."), never the text's failure to be a Diff JSON.
// - diff_sha256 is optional: Diff::from_json refuses one that is present and wrong
//   (hash_mismatch), and the kernel records the digest it computes itself either way.
// - An executor that gave nothing (proposal.executor_refusal) is refused executor_timeout or
//   executor_failed, never malformed_diff for the null where a Diff would be.
// - A run result must name this proposal's diff (RunResult.diff_sha256), else hash_mismatch:
//   a passing run of some other tree proves nothing about this one.
// - An empty plan.allowed_paths leaves the policy's allow list alone in charge.
// - Deny, protected and approval globs (and the oracle's) match Unicode case folded (glob.h):
//   a case-insensitive checkout opens .ENV as .env; allowed paths and plan targets stay exact.
// - The oracle (oracle.h) is judged on the pre- and post-images: whole test files and hooks by
//   name, shared build files by their test sections; a proposal that does not apply has no
//   post-images, so only the whole files are judged then.
#include "kernel/judge/decide.h"

#include "kernel/judge/approval.h"
#include "kernel/judge/content_rules.h"
#include "kernel/judge/decide_rules.h"

namespace warden::kernel {
namespace detail {
namespace {

std::string_view reason_for_refusal(std::string_view code) {
  if (code == "hash_mismatch" || code == "after_hash_mismatch" || code == "hunk_mismatch" ||
      code == "hunk_count_mismatch" || code == "mode_mismatch") {
    return reason::hash_mismatch;
  }
  if (code.starts_with("path_") || code == "symlink_escapes_tree") return reason::path_not_allowed;
  return reason::malformed_diff;
}

}  // namespace

void add_refusal(const Refusal& refusal, Reasons& reasons) {
  reasons.add(reason_for_refusal(refusal_code_name(refusal.code)), refusal.message());
}

}  // namespace detail

using namespace detail;

namespace {

// An executor that gave nothing: its own code when it is one of the executor's, else (a
// record no kernel writes) executor_failed.
void add_executor_refusal(const Refusal& refusal, Reasons& reasons) {
  reasons.add(refusal.code == RefusalCode::executor_timeout ? reason::executor_timeout : reason::executor_failed,
              refusal.detail.empty() ? refusal.message() : refusal.detail);
}

void check_progress(const DecisionInput& in, const BuildStep& step, Reasons& reasons) {
  if (in.completed_steps.contains(step.id)) {
    reasons.add(reason::step_already_completed, "step " + step.id + " is already completed");
  }
  for (const std::string& dep : step.dependencies) {
    if (!in.completed_steps.contains(dep)) {
      reasons.add(std::string(reason::dependency_not_satisfied) + ":" + dep,
                  "step " + step.id + " depends on " + dep + ", which is not completed");
    }
  }
}

}  // namespace

Verdict decide(const DecisionInput& in) {
  Reasons reasons;
  const BuildStep* step = in.plan.find(in.proposal.step_id);
  if (!step) {
    reasons.add(reason::step_not_in_plan, "step " + in.proposal.step_id + " is not in plan " + in.plan.name);
    return reasons.verdict();
  }
  check_progress(in, *step, reasons);
  if (in.proposal.workspace_refusal) add_refusal(*in.proposal.workspace_refusal, reasons);

  // A patch that did not become a Diff is refused for what the patch said, and an executor
  // that gave nothing for why it gave nothing — not for the text (or the null) left in place
  // of a Diff.
  if (in.proposal.patch_refusal) add_refusal(*in.proposal.patch_refusal, reasons);
  if (in.proposal.executor_refusal) add_executor_refusal(*in.proposal.executor_refusal, reasons);
  auto diff = Diff::from_json(in.proposal.diff);
  // Approvals (approval.h) count only signed by a key the policy names, for exactly this diff.
  AdmittedTests admitted;
  if (diff && !step->approvals.empty()) admitted = admitted_tests(step->approvals, diff->digest(), in.policy.approvers);
  if (!diff) {
    if (!in.proposal.patch_refusal && !in.proposal.executor_refusal) add_refusal(diff.error(), reasons);
  } else {
    check_shape(in, *step, *diff, reasons);
    check_paths(in, *step, *diff, reasons);
    std::optional<PostImages> post_images = apply_to_base(in.proposal, *diff, reasons);
    const PostImages* post = post_images ? &*post_images : nullptr;
    check_oracle(in, *step, *diff, post, admitted, reasons);
    for (std::string& problem : content_mismatches(ContentCheck{*step, *diff, in.proposal.base, post, in.policy.exact_content})) {
      reasons.add(reason::content_mismatch, std::move(problem));
    }
    check_checkout_attributes(in, *diff, post, reasons);
    if (in.policy.dangerous_operations) check_dangerous(in, *diff, post, reasons);
  }
  check_run(in, *step, diff ? &*diff : nullptr, admitted.tests, reasons);
  check_held_out(in, *step, reasons);
  return reasons.verdict();
}

}  // namespace warden::kernel
