// Verdicts, as pure functions of recorded evidence, never of durations. A run's outcome:
// error when the sandbox could not run it, timeout, failed on an output flood, failed when
// its report was read and names no test that ran (zero tests, or all skipped), then (with
// FAIL_TO_PASS / PASS_TO_PASS ids) whether every listed test passed, else whether it exited
// 0 with its report readable and no failing test. A check's verdict: every completed run
// (not error) must agree on outcome and tests, and at least `quorum` must have completed;
// disagreement is flaky_oracle, never a pass.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/model/check_spec.h"
#include "runner/model/run_result.h"

namespace warden {

std::string run_outcome(const CheckRun& run, const CheckSpec& spec, const std::optional<TestJudgement>& judgement);
std::string combine_runs(const std::vector<CheckRun>& runs, int64_t quorum);

// A finished run's outcome from its own evidence: its judgement of the spec's listed tests
// (if it lists any), then run_outcome. An "error" run (the sandbox could not run it) stays one.
std::string judge_run(const CheckRun& run, const CheckSpec& spec);
// Sets a check's verdict, agreed tests and judgement from its runs: everything of a
// CheckResult that follows from the runs and the spec. The runner that ran the check and the
// kernel that receives it from another machine apply the same rules.
void judge_check(CheckResult& check, const CheckSpec& spec);
// The invariants the checks prove: each spec's `proves`, proven when its check passed; a
// failing check names the invariant it did not prove. `checks` in the order of `specs`.
std::map<std::string, InvariantVerdict> prove_invariants(const std::vector<CheckSpec>& specs,
                                                         const std::vector<CheckResult>& checks);

// True when the check failed and its agreed run (its first completed one) read its report and
// the report names no test that ran: it failed because it proved nothing (`no_tests_ran`).
bool ran_no_tests(const CheckResult& check);

}  // namespace warden
