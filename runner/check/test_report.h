// Test results a check leaves behind: the two formats test runners commonly write, JUnit
// XML (pytest --junitxml, Maven, Go's gotestsum, ...) and TAP (prove, node --test, ...), the
// output of the runners Warden knows (unittest -v, ctest, go test -json), and the
// FAIL_TO_PASS / PASS_TO_PASS judgement over them. Reports come from sandboxed code: size
// and count are bounded, parsing never touches the network or other files, and every id is
// made valid UTF-8. Every parser returns the tests sorted by id; a repeated id keeps its
// worst status (error > failed > passed > skipped), so a line the tested code prints can add
// a test but never make a real one look better than it did.
//
// A stream report (TAP, unittest, ctest on the check's stdout or stderr) shares its stream
// with the code under test, which can print lines of the same shape: these parsers bound
// what such lines can do, they do not authenticate them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "runner/model/run_result.h"

namespace warden {

inline constexpr uint64_t kMaxReportBytes = 16 << 20;
inline constexpr size_t kMaxReportTests = 200'000;

// Every <testcase>: id "classname::name" (or name), status from <failure>, <error>,
// <skipped> children (pytest: "tests.test_ops.TestOps::test_mul", an xfail is skipped).
Result<std::vector<TestCase>> parse_junit(std::string_view xml);
// Top-level "ok"/"not ok" lines: id is the description (or "#N"), "# SKIP" gives skipped,
// "# TODO" a failing test skipped; "Bail out!" and a plan the lines fall short of add an
// error entry ("bail_out", "plan").
Result<std::vector<TestCase>> parse_tap(std::string_view text);
// `python -m unittest -v` (its stderr), as Python 3.11 prints it: "name (pkg.mod.Class.name)
// ... ok" (before 3.11 "name (pkg.mod.Class)"), a docstring's first line on a line of its own,
// the result after output the test wrote, subtests (folded into their test: "  name (id)
// (i=1) ... FAIL"), and the FAIL:/ERROR:/UNEXPECTED SUCCESS: headings after the run (which
// also name class and module fixtures: "pkg.mod.Class.setUpClass"). Id: "pkg.mod.Class.name".
// ok is passed, FAIL and unexpected success failed, ERROR error, skipped and expected failure
// skipped; a result line after a test's own result makes that test no better. A test with no
// result (the process died) is an error, and so is a missing "Ran N tests" summary
// ("summary"). Output without -v ("Ran 3 tests" but no test lines) is refused: it names no
// test.
Result<std::vector<TestCase>> parse_unittest(std::string_view text);
// ctest's result lines ("1/3 Test #1: name ....   Passed  0.01 sec"): Passed is passed,
// ***Failed failed, ***Skipped and "Not Run (Disabled)" skipped, ***Timeout, ***Exception,
// ***Not Run and any other *** status error. Id: the test's name. "No tests were found!!!"
// is zero tests.
Result<std::vector<TestCase>> parse_ctest(std::string_view text);
// `go test -json` (test2json's JSON lines): Action pass/fail/skip with a Test give that
// test's status; a test that ran and never ended, a package that failed without a test (a
// panic, a build failure) and "build-fail" events are errors. Id: "Package::Test" (Test
// alone without a Package; subtests keep Go's "TestX/sub" names). Lines that are not JSON
// objects are skipped (the go command's own messages).
Result<std::vector<TestCase>> parse_go_test_json(std::string_view text);

// The parser for a CheckSpec::report_format other than "none" (pytest's report is JUnit).
Result<std::vector<TestCase>> parse_report(std::string_view format, std::string_view text);

// True when no test in `tests` ran: there are none, or every one was skipped.
bool no_test_ran(const std::vector<TestCase>& tests);

TestJudgement judge_tests(const std::vector<TestCase>& tests, const std::vector<std::string>& fail_to_pass,
                          const std::vector<std::string>& pass_to_pass);

}  // namespace warden
