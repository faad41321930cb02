// Test results a check leaves behind, in the two formats test runners commonly write: JUnit
// XML (pytest --junitxml, Maven, Go's gotestsum, ...) and TAP (prove, node --test, ...), and
// the FAIL_TO_PASS / PASS_TO_PASS judgement over them. Reports come from sandboxed code:
// size and count are bounded, parsing never touches the network or other files, and every
// id is made valid UTF-8.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "runner/run_result.h"

namespace warden {

inline constexpr uint64_t kMaxReportBytes = 16 << 20;
inline constexpr size_t kMaxReportTests = 200'000;

// Every <testcase>: id "classname::name" (or name), status from <failure>, <error>,
// <skipped> children. Sorted by id; a repeated id keeps its worst status.
Result<std::vector<TestCase>> parse_junit(std::string_view xml);
// Top-level "ok"/"not ok" lines: id is the description (or "#N"), "# SKIP" gives skipped,
// "# TODO" a failing test skipped; "Bail out!" and a plan the lines fall short of add an
// error entry ("bail_out", "plan").
Result<std::vector<TestCase>> parse_tap(std::string_view text);

TestJudgement judge_tests(const std::vector<TestCase>& tests, const std::vector<std::string>& fail_to_pass,
                          const std::vector<std::string>& pass_to_pass);

}  // namespace warden
