#include "runner/check/check_verdict.h"

#include <algorithm>

#include "runner/check/test_report.h"

namespace warden {

std::string run_outcome(const CheckRun& run, const CheckSpec& spec, const std::optional<TestJudgement>& judgement) {
  if (!run.error.empty()) return kError;
  if (run.timed_out) return kTimeout;
  if (run.output_limit_exceeded) return kFailed;
  // A suite that ran nothing proves nothing, whatever its exit status.
  if (run.report == "parsed" && no_test_ran(run.tests)) return kFailed;
  // A SWE-bench style check: the suite may fail elsewhere; the listed tests decide.
  if (judgement) return judgement->ok && run.report == "parsed" ? kPassed : kFailed;
  if (run.exit_code != 0 || run.signal != 0) return kFailed;
  if (spec.report_format != "none" && run.report != "parsed") return kFailed;
  bool failing = std::any_of(run.tests.begin(), run.tests.end(),
                             [](const TestCase& t) { return t.status == "failed" || t.status == "error"; });
  return failing ? kFailed : kPassed;
}

std::string combine_runs(const std::vector<CheckRun>& runs, int64_t quorum) {
  const CheckRun* first = nullptr;
  int64_t completed = 0;
  for (const CheckRun& r : runs) {
    if (r.outcome == kError) continue;
    ++completed;
    if (!first) {
      first = &r;
    } else if (r.outcome != first->outcome || r.tests != first->tests) {
      return kFlakyOracle;
    }
  }
  if (!first || completed < quorum) return kError;
  return first->outcome;
}

bool ran_no_tests(const CheckResult& check) {
  auto agreed = std::find_if(check.runs.begin(), check.runs.end(), [](const CheckRun& r) { return r.outcome != kError; });
  return check.verdict == kFailed && agreed != check.runs.end() && agreed->report == "parsed" &&
         no_test_ran(agreed->tests);
}

std::string judge_run(const CheckRun& run, const CheckSpec& spec) {
  if (run.outcome == kError) return kError;
  std::optional<TestJudgement> judgement;
  if (!spec.fail_to_pass.empty() || !spec.pass_to_pass.empty()) {
    judgement = judge_tests(run.tests, spec.fail_to_pass, spec.pass_to_pass);
  }
  return run_outcome(run, spec, judgement);
}

void judge_check(CheckResult& c, const CheckSpec& spec) {
  c.verdict = combine_runs(c.runs, spec.effective_quorum());
  auto agreed = std::find_if(c.runs.begin(), c.runs.end(), [](const CheckRun& r) { return r.outcome != kError; });
  c.tests = agreed != c.runs.end() ? agreed->tests : std::vector<TestCase>{};
  c.judgement.reset();
  if (!spec.fail_to_pass.empty() || !spec.pass_to_pass.empty()) {
    c.judgement = judge_tests(c.tests, spec.fail_to_pass, spec.pass_to_pass);
    // A flaky or broken check proves nothing about its tests.
    if (c.verdict != kPassed) c.judgement->ok = false;
  }
}

std::map<std::string, InvariantVerdict> prove_invariants(const std::vector<CheckSpec>& specs,
                                                         const std::vector<CheckResult>& checks) {
  std::map<std::string, InvariantVerdict> out;
  for (size_t i = 0; i < specs.size() && i < checks.size(); ++i) {
    for (const auto& invariant : specs[i].proves) {
      const bool passed = checks[i].verdict == kPassed;
      auto [it, fresh] = out.try_emplace(invariant, InvariantVerdict{passed, checks[i].name});
      if (!fresh && it->second.proven && !passed) it->second = InvariantVerdict{false, checks[i].name};
    }
  }
  return out;
}

}  // namespace warden
