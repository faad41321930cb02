// Which test report a check's shell command leaves, judged from the command's text alone:
// the CLI's `--check 'CMD'` has no spec to say so. The command is split like /bin/sh would
// split it (quotes, `;` `&&` `||` `|` `&`, parentheses, redirections, `VAR=x`, and wrappers
// such as env, exec, timeout, `sh -c '...'`), and each simple command's program is looked at:
//
//   python3 -m unittest ... -v      unittest (stderr). Without -v unittest names no test, so
//                                   the runner's reporter makes it (CheckSpec::
//                                   unittest_reporter), unless the command sets PYTHONPATH
//                                   itself: then the exit status alone judges (a note says so)
//   pytest, python3 -m pytest       pytest (the runner adds --junitxml through PYTEST_ADDOPTS);
//                                   junit at its path when the command names its own --junitxml
//   ctest                           ctest (stdout)
//   go test -json                   go-json (stdout)
//   anything else (make test, ./run_tests.sh, ...)   none
//
// A runner whose report stream the command redirects or pipes away (other than through
// tee), or several runners of different formats in one command, give none with a note: the
// user says which report with --report. Pure functions, no I/O; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "runner/model/check_spec.h"

namespace warden {

struct DetectedReport {
  std::string format = "none";
  std::string path;  // report_path: a --junitxml the command names
  std::string note;  // why an apparent test runner gives no report, for the user; else empty
  bool unittest_reporter = false;  // unittest without -v: the runner's reporter names its tests
};

DetectedReport detect_report(std::string_view command);

// A `--check` command as a check: CheckSpec::shell() with its report from `report`, which is
// "auto" (detect_report()), a format ("unittest"), or FORMAT:PATH ("junit:out/junit.xml").
// Refuses (invalid_argument) what CheckSpec::from_json would refuse, e.g. an unknown format
// or a junit report without a path. `note` is detect_report()'s, for "auto".
struct CommandCheck {
  CheckSpec spec;
  std::string note;
};
Result<CommandCheck> command_check(std::string name, const std::string& command, std::string_view report = "auto");

}  // namespace warden
