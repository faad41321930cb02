// What a check is: a command run in the sandbox with its own evidence, how many times (a
// quorum for flaky oracles), where its test report is and in which format, which test ids
// must go from failing to passing and which must keep passing, and which invariants it
// proves. A spec's digest is part of the result cache key.
//
// Plain values, safe to share read-only. from_json() refuses (invalid_argument, naming the
// field under `where`) a spec that is malformed or inconsistent; the input must be fixed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/canonical_json.h"
#include "common/error.h"
#include "common/sha256.h"

namespace warden {

// A file a check leaves in its workspace that is kept as evidence (a built binary, a coverage
// report): its bytes go to the blob store, with the type the check declares.
struct ArtifactSpec {
  std::string path;  // workspace-relative
  std::string type;  // e.g. "binary", "document", "report"
  bool operator==(const ArtifactSpec&) const = default;
};

// Where a check's test report is read from.
enum class ReportSource { none, file, stdout_stream, stderr_stream };

// The report formats, each with its parser (runner/check/test_report.h) and where it is read:
//   none      no report: the exit status alone judges the check
//   junit     JUnit XML the check writes at report_path (required)
//   tap       TAP at report_path, else stdout
//   unittest  `python -m unittest -v` output at report_path, else stderr
//   pytest    JUnit XML that pytest writes at kPytestReportFile: the runner adds
//             `--junitxml=<workspace>/kPytestReportFile` to PYTEST_ADDOPTS (no report_path)
//   ctest     ctest's result lines at report_path, else stdout
//   go-json   `go test -json` events at report_path, else stdout
bool is_report_format(std::string_view format);
inline constexpr const char* kReportFormats = "none, junit, tap, unittest, pytest, ctest or go-json";
inline constexpr const char* kPytestReportFile = ".warden-pytest-report.xml";

struct CheckSpec {
  std::string name;
  std::vector<std::string> argv;
  std::optional<int64_t> timeout_ms;  // at most the profile's wall timeout
  int64_t runs = 1;                   // executions; every one is recorded
  int64_t quorum = 0;                 // agreeing completed runs needed for a verdict (0: all runs)
  std::string report_format = "none"; // is_report_format()
  std::string report_path;            // workspace-relative; empty: the format's stream
  std::vector<std::string> fail_to_pass, pass_to_pass;
  std::vector<std::string> proves;    // invariant names this check proves when it passes
  std::map<std::string, std::string> env;
  std::vector<ArtifactSpec> artifacts;  // in to_json only when declared, so older digests hold
  // The report comes through the runner's authenticated channel (report_channel.h), never
  // from stdout or the workspace: for test runners that import the code under test into
  // their own process. Needs report_format tap or junit and no report_path.
  bool authenticated_report = false;  // in to_json only when set
  // Names of earlier checks of the same request whose passed test ids this check reads, as a
  // read-only file (passed_tests_input.h): an invariant judged on the tests that ran.
  std::vector<std::string> tests_from;  // in to_json only when declared
  // Python's unittest names no test below -v: the runner loads its reporter
  // (unittest_reporter.h) into the check's Python through PYTHONPATH, so a `python -m
  // unittest` run prints -v's lines on stderr whatever verbosity the command asks for. Needs
  // report_format unittest; in to_json only when set.
  bool unittest_reporter = false;

  int64_t effective_quorum() const { return quorum == 0 ? runs : quorum; }
  ReportSource report_source() const;
  // The workspace-relative report file for ReportSource::file.
  std::string report_file() const { return report_format == "pytest" ? kPytestReportFile : report_path; }

  // `command` through /bin/sh -c, as the CLI's --check does.
  static CheckSpec shell(std::string name, const std::string& command);
  static Result<CheckSpec> from_json(const Json& json, std::string_view where = "check");
  Json to_json() const;
  Digest digest() const;
};

}  // namespace warden
