#include "kernel/judge/oracle_run.h"

namespace warden::kernel {

namespace {

// Whether an approval names one of the units of the test file `path`.
bool names_unit_of(const std::set<std::string>& approved, const std::string& path) {
  auto it = approved.lower_bound(path + "::");
  return it != approved.end() && it->starts_with(path + "::");
}

}  // namespace

std::optional<Diff> oracle_diff(const Diff& diff, const ProposalEvidence& proposal, const OracleRules& rules,
                                const std::set<std::string>& approved) {
  auto base_test = [&](const std::optional<std::string>& path) {
    if (!path || !changes_existing_test(rules, *path) || names_unit_of(approved, *path)) return false;
    auto base = proposal.base.find(*path);
    return base != proposal.base.end() && base->second.content.has_value();
  };
  Diff out{diff.step_id, {}};
  bool dropped = false;
  for (const FileChange& f : diff.files) {
    // Decided by path, whatever the op: a base test file keeps its base content (a modify, a
    // removal, a removal and an add of the same path, a rename onto or away from it), and a
    // new test or hook is left out.
    const bool is_new = !base_test(f.path) && (proposal.base.find(f.path) == proposal.base.end() ||
                                               !proposal.base.find(f.path)->second.content);
    const bool touches_base_test = base_test(f.path) || (f.op == FileOp::rename && base_test(f.old_path));
    // A file renamed or copied in as a new test keeps its change (decide() refuses it): dropping a
    // rename would leave its source in place.
    const bool new_oracle = is_new && f.op != FileOp::rename && f.op != FileOp::remove && adds_to_oracle(rules, f.path);
    if (touches_base_test || new_oracle) {
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

bool judged_by_exit_status(const CheckSpec& check) {
  return check.report_format == "none" && check.proves.empty() && check.tests_from.empty();
}

std::vector<CheckSpec> oracle_checks(const std::vector<CheckSpec>& checks, bool base_passed_a_test) {
  // What decide() compares, nothing else: an invariant or a lint is judged on the proposal's run.
  std::vector<CheckSpec> out;
  for (const CheckSpec& c : checks) {
    if (judged_by_exit_status(c) || (base_passed_a_test && c.report_format != "none")) out.push_back(c);
  }
  return out;
}

}  // namespace warden::kernel
