// The oracle run: the base's tests on the proposal's code, with the base's test files. New
// test files may be added and existing ones may gain tests (oracle.h), but a test module runs
// code when it is imported, in the same process as the base's tests: it could replace the
// very function they test, or shadow its module. So when a proposal adds oracle files or
// changes a test file, the kernel also runs its test checks on the proposal's diff without
// those changes, and decide() holds that run, as well as the full one, to every test that
// passed on the base; the verdict on the base's tests never rests on a test file the
// proposal wrote.
//
// Pure functions of the diff, the recorded pre-images and the policy's oracle: the build
// loop and replay derive the same oracle diff.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "diff/diff.h"
#include "kernel/judge/oracle.h"
#include "kernel/judge/proposal_evidence.h"
#include "runner/model/check_spec.h"
#include "runner/model/run_result.h"

namespace warden::kernel {

// `diff` without the files it adds to the oracle (new tests and hooks, absent from the
// base) and without every change to an existing test file (so they run as the base has them);
// none when there are none. The result keeps the diff's step id.
// `approved` is what the step's verified approvals admit (admitted_tests(), approval.h):
// "path::unit" or a whole file's "path". A base test file whose units one of them names keeps
// the proposal's change, so the tests a person admitted run as the proposal writes them: a test
// runner that names whole programs (ctest) cannot tell an admitted test from the others of its
// file, and the rest of that file is the base's (the structural comparison has seen to that).
// A file admitted whole (tests/CMakeLists.txt, test data) stays the base's: the new test files
// it may list are left out of this run too.
std::optional<Diff> oracle_diff(const Diff& diff, const ProposalEvidence& proposal, const OracleRules& rules,
                                const std::set<std::string>& approved = {});

// Whether the base passed any test: only then is there anything for an oracle run to guard.
bool base_passed_a_test(const RunResult& base);

// Whether a check is a test command judged by its exit status alone: it reports no tests,
// proves no invariant and reads no other check's tests (an invariant such as "every function
// has a test" is about the proposal's own tests, which the oracle run leaves out).
bool judged_by_exit_status(const CheckSpec& check);

// The checks the oracle run repeats: every check judged by its exit status alone (decide()
// holds each one that passed with the proposal's test files to pass with the base's: nothing
// else tells a test file that was weakened from one that was not), and, when the base passed a
// test (`base_passed_a_test`), the checks that report tests (a check's tests_from names one of
// those), in the order of `checks`. Invariant checks are not repeated: decide() judges them on
// the proposal's own run.
std::vector<CheckSpec> oracle_checks(const std::vector<CheckSpec>& checks, bool base_passed_a_test);

}  // namespace warden::kernel
