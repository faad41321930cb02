#include "kernel/oracle_run.h"

namespace warden::kernel {

std::optional<Diff> oracle_diff(const Diff& diff, const ProposalEvidence& proposal, const OracleRules& rules) {
  Diff out{diff.step_id, {}};
  bool dropped = false;
  for (const FileChange& f : diff.files) {
    auto base = proposal.base.find(f.path);
    const bool is_new = base == proposal.base.end() || !base->second.content;
    // A rename keeps its source's removal: dropping it would leave the old file in place.
    if (is_new && f.op != FileOp::rename && f.op != FileOp::remove && adds_to_oracle(rules, f.path)) {
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
