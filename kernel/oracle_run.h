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

#include "diff/diff.h"
#include "kernel/oracle.h"
#include "kernel/proposal_evidence.h"
#include "runner/run_result.h"

namespace warden::kernel {

// `diff` without the files it adds to the oracle (new tests and hooks, absent from the
// base) and without every change to an existing test file (so they run as the base has them);
// none when there are none. The result keeps the diff's step id.
// Every base test file stays as the base has it, even one an approval lets the proposal
// change: the approved tests may fail or be missing in the oracle run, and are judged as the
// proposal writes them in the full run.
std::optional<Diff> oracle_diff(const Diff& diff, const ProposalEvidence& proposal, const OracleRules& rules);

// Whether the base passed any test: only then is there anything for an oracle run to guard.
bool base_passed_a_test(const RunResult& base);

}  // namespace warden::kernel
