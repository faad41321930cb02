#include "runner/model/check_spec.h"

#include "common/json_reader.h"
#include "common/strings.h"

namespace warden {
namespace {

bool safe_relative_path(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.find('\0') != std::string::npos || p.back() == '/') return false;
  for (std::string_view part : split_path(p)) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

}  // namespace

bool is_report_format(std::string_view f) {
  return f == "none" || f == "junit" || f == "tap" || f == "unittest" || f == "pytest" || f == "ctest" || f == "go-json";
}

ReportSource CheckSpec::report_source() const {
  if (report_format == "none") return ReportSource::none;
  if (report_format == "pytest" || !report_path.empty()) return ReportSource::file;
  return report_format == "unittest" ? ReportSource::stderr_stream : ReportSource::stdout_stream;
}

CheckSpec CheckSpec::shell(std::string name, const std::string& command) {
  CheckSpec c;
  c.name = std::move(name);
  c.argv = {"/bin/sh", "-c", command};
  return c;
}

Result<CheckSpec> CheckSpec::from_json(const Json& json, std::string_view where) {
  CheckSpec c;
  JsonReader r(json, std::string(where));
  r.string("name", c.name);
  if (r.ok() && (c.name.empty() || c.name.size() > 128)) r.fail("name", "must be 1-128 characters");
  r.strings("argv", c.argv);
  if (r.ok() && c.argv.empty()) r.fail("argv", "must name a command");
  int64_t timeout = 0;
  if (r.has("timeout_ms")) {
    r.integer("timeout_ms", timeout, 1, 86'400'000);
    c.timeout_ms = timeout;
  } else {
    r.value("timeout_ms", Json::value_t::number_integer, false);
  }
  r.integer("runs", c.runs, 1, 100, false);
  r.integer("quorum", c.quorum, 0, 100, false);
  if (r.ok() && c.quorum > c.runs) r.fail("quorum", "must not exceed runs");
  r.string("report_format", c.report_format, false);
  if (r.ok() && !is_report_format(c.report_format)) r.fail("report_format", std::string("must be ") + kReportFormats);
  r.string("report_path", c.report_path, false);
  if (r.ok() && c.report_format == "junit" && c.report_path.empty()) r.fail("report_path", "a JUnit report needs its path");
  if (r.ok() && c.report_format == "pytest" && !c.report_path.empty()) {
    r.fail("report_path", "pytest's report path is the runner's (for a --junitxml of the command's own, use junit)");
  }
  if (r.ok() && !c.report_path.empty() && !safe_relative_path(c.report_path)) {
    r.fail("report_path", "must be a relative path inside the workspace");
  }
  r.strings("fail_to_pass", c.fail_to_pass, false);
  r.strings("pass_to_pass", c.pass_to_pass, false);
  if (r.ok() && (!c.fail_to_pass.empty() || !c.pass_to_pass.empty()) && c.report_format == "none") {
    r.fail("report_format", "fail_to_pass/pass_to_pass need a test report");
  }
  r.strings("proves", c.proves, false);
  r.string_map("env", c.env, false);
  if (const Json* list = r.value("artifacts", Json::value_t::array, false)) {
    for (size_t i = 0; i < list->size() && r.ok(); ++i) {
      JsonReader a((*list)[i], r.path("artifacts") + "[" + std::to_string(i) + "]");
      ArtifactSpec spec;
      a.string("path", spec.path);
      a.string("type", spec.type);
      if (a.ok() && !safe_relative_path(spec.path)) a.fail("path", "must be a relative path inside the workspace");
      if (a.ok() && spec.type.empty()) a.fail("type", "must name the artifact's type");
      r.adopt(a.finish());
      c.artifacts.push_back(std::move(spec));
    }
  }
  r.boolean("authenticated_report", c.authenticated_report, false);
  if (r.ok() && c.authenticated_report && c.report_format == "none") {
    r.fail("authenticated_report", "needs a report_format (tap or junit)");
  }
  if (r.ok() && c.authenticated_report && !c.report_path.empty()) {
    r.fail("report_path", "an authenticated report comes through the runner's channel, not a file");
  }
  r.boolean("unittest_reporter", c.unittest_reporter, false);
  if (r.ok() && c.unittest_reporter && c.report_format != "unittest") r.fail("unittest_reporter", "needs report_format unittest");
  r.strings("tests_from", c.tests_from, false);
  for (const std::string& from : c.tests_from) {
    if (r.ok() && (from.empty() || from == c.name)) r.fail("tests_from", "must name other checks");
  }
  if (Status st = r.finish(); !st) return std::unexpected(st.error());
  return c;
}

Json CheckSpec::to_json() const {
  Json j = {{"name", name},           {"argv", argv},           {"runs", runs},
            {"quorum", quorum},       {"report_format", report_format}, {"report_path", report_path},
            {"fail_to_pass", fail_to_pass}, {"pass_to_pass", pass_to_pass}, {"proves", proves},
            {"env", env}};
  if (timeout_ms) j["timeout_ms"] = *timeout_ms;
  if (!artifacts.empty()) {
    Json list = Json::array();
    for (const auto& a : artifacts) list.push_back({{"path", a.path}, {"type", a.type}});
    j["artifacts"] = std::move(list);
  }
  if (authenticated_report) j["authenticated_report"] = true;
  if (!tests_from.empty()) j["tests_from"] = tests_from;
  if (unittest_reporter) j["unittest_reporter"] = true;
  return j;
}

Digest CheckSpec::digest() const { return sha256(canonicalize(to_json()).value()); }

}  // namespace warden
