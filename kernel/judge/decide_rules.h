// What decide() (decide.cc) and its rule families share, private to kernel/judge: the reasons
// gathered while deciding, and the rules each family file holds. decide_diff_rules.cc judges the
// proposal's diff (its shape, paths, the oracle, the pre-images, dangerous operations, checkout
// attributes); decide_run_rules.cc judges the run of its checks (tests kept and added, the
// oracle run, required checks, invariants, the held-out checks). Each rule adds its reasons and
// does nothing else.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/judge/approval.h"
#include "kernel/judge/content_rules.h"
#include "kernel/judge/decide.h"

namespace warden::kernel::detail {

// Reasons gathered while deciding: one per code, sorted by code, the details of one code
// joined in the order they were found.
class Reasons {
 public:
  void add(std::string_view code, std::string detail) {
    auto& details = details_[std::string(code)];
    if (std::find(details.begin(), details.end(), detail) == details.end()) details.push_back(std::move(detail));
  }
  bool empty() const { return details_.empty(); }

  Verdict verdict() const {
    Verdict v;
    for (const auto& [code, details] : details_) {
      std::string joined;
      for (const auto& d : details) joined += (joined.empty() ? "" : "; ") + d;
      v.reasons.push_back(Reason{code, std::move(joined)});
    }
    v.accepted = v.reasons.empty();
    return v;
  }

 private:
  std::map<std::string, std::vector<std::string>> details_;
};

// A refusal of the diff (by the workspace, the patch parser or re-applying it), as the reason
// its code says about the proposal.
void add_refusal(const Refusal& refusal, Reasons& reasons);

// The proposal's diff (decide_diff_rules.cc).
void check_shape(const DecisionInput& in, const BuildStep& step, const Diff& diff, Reasons& reasons);
void check_paths(const DecisionInput& in, const BuildStep& step, const Diff& diff, Reasons& reasons);
void check_oracle(const DecisionInput& in, const BuildStep& step, const Diff& diff, const PostImages* post,
                  const AdmittedTests& admitted, Reasons& reasons);
std::optional<PostImages> apply_to_base(const ProposalEvidence& proposal, const Diff& diff, Reasons& reasons);
void check_dangerous(const DecisionInput& in, const Diff& diff, const PostImages* post_images, Reasons& reasons);
void check_checkout_attributes(const DecisionInput& in, const Diff& diff, const PostImages* post_images, Reasons& reasons);

// The run of its checks (decide_run_rules.cc).
void check_run(const DecisionInput& in, const BuildStep& step, const Diff* diff, const std::set<std::string>& approved,
               Reasons& reasons);
void check_held_out(const DecisionInput& in, const BuildStep& step, Reasons& reasons);

}  // namespace warden::kernel::detail
