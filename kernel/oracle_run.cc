#include "kernel/oracle_run.h"

#include "kernel/approval.h"

namespace warden::kernel {

std::set<std::string> approved_tests(const BuildStep& step, const Policy& policy, const Diff& diff) {
  if (step.approvals.empty()) return {};
  return admitted_tests(step.approvals, diff.digest(), policy.approvers).tests;
}

std::optional<Diff> oracle_diff(const Diff& diff, const ProposalEvidence& proposal, const OracleRules& rules,
                                const std::set<std::string>& approved) {
  auto has_approval = [&](const std::string& path) {
    auto it = approved.lower_bound(path + "::");
    return it != approved.end() && it->starts_with(path + "::");
  };
  Diff out{diff.step_id, {}};
  bool dropped = false;
  for (const FileChange& f : diff.files) {
    auto base = proposal.base.find(f.path);
    const bool is_new = base == proposal.base.end() || !base->second.content;
    // A rename keeps its source's removal: dropping it would leave the old file in place.
    // An existing test file the proposal changes (by addition: decide() refuses anything else)
    // is run as the base has it.
    const bool changed_test = !is_new && f.op == FileOp::modify && changes_existing_test(rules, f.path) && !has_approval(f.path);
    if ((is_new && f.op != FileOp::rename && f.op != FileOp::remove && adds_to_oracle(rules, f.path)) || changed_test) {
      dropped = true;
      continue;
    }
    out.files.push_back(f);
  }
  if (!dropped) return std::nullopt;
  return out;
}

bool base_passed_a_test(const RunResult& base) {
  for (const CheckResult& c : base.checks) {
    for (const TestCase& t : c.tests) {
      if (t.status == "passed") return true;
    }
  }
  return false;
}

}  // namespace warden::kernel
