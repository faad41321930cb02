#include "runner/check/test_report.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "common/canonical_json.h"
#include "runner/sandbox/output_capture.h"

namespace warden {
namespace {

int severity(const std::string& status) {
  if (status == "error") return 3;
  if (status == "failed") return 2;
  if (status == "passed") return 1;
  return 0;  // skipped
}

class TestSet {
 public:
  Status add(std::string id, std::string status) {
    id = sanitize_utf8(id);
    auto [it, fresh] = tests_.try_emplace(id, status);
    if (!fresh && severity(status) > severity(it->second)) it->second = status;
    if (tests_.size() > kMaxReportTests) {
      return fail(Errc::limit_exceeded, "more than " + std::to_string(kMaxReportTests) + " tests");
    }
    return {};
  }
  std::vector<TestCase> take() const {
    std::vector<TestCase> out;
    out.reserve(tests_.size());
    for (const auto& [id, status] : tests_) out.push_back({id, status});
    return out;
  }

 private:
  std::map<std::string, std::string> tests_;
};

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return "";
  size_t b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// A text's lines, borrowed, without their '\n' or a trailing '\r'.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    line = cut(pos_);
    return true;
  }
  std::string_view peek() const {
    size_t pos = pos_;
    return pos < text_.size() ? cut(pos) : std::string_view();
  }

 private:
  std::string_view cut(size_t& pos) const {
    size_t end = text_.find('\n', pos);
    if (end == std::string_view::npos) end = text_.size();
    std::string_view line = text_.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  }
  std::string_view text_;
  size_t pos_ = 0;
};

Status too_large(std::string_view text, std::string_view what) {
  if (text.size() <= kMaxReportBytes) return {};
  return fail(Errc::limit_exceeded, std::string(what) + " larger than 16 MiB");
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// --- unittest -v ---

// "name (pkg.mod.Class.name)" (3.11) or "name (pkg.mod.Class)" (earlier), then a subtest's
// " (params)" and " ... " with what follows; `rest` is that tail (empty when the line ends
// at the description, as when a docstring line follows).
struct UnittestLine {
  std::string id;
  bool has_result_part = false;
  std::string_view rest;
};

bool identifier_byte(char c) {
  auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || u >= 0x80;  // Python identifiers may be non-ASCII
}

std::optional<UnittestLine> unittest_line(std::string_view line) {
  size_t space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return std::nullopt;
  std::string_view name = line.substr(0, space);
  if (!std::all_of(name.begin(), name.end(), identifier_byte)) return std::nullopt;
  if (line.substr(space, 2) != " (") return std::nullopt;
  size_t close = line.find(')', space + 2);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view where = line.substr(space + 2, close - space - 2);
  if (where.empty() || where.find_first_of(" (") != std::string_view::npos) return std::nullopt;
  UnittestLine out;
  out.id = where.ends_with("." + std::string(name)) ? std::string(where) : std::string(where) + "." + std::string(name);
  std::string_view after = line.substr(close + 1);
  size_t dots = after.find(" ...");
  if (dots == std::string_view::npos) {
    // Only a subtest's parameters may follow the description.
    if (!trim_view(after).empty() && !after.starts_with(" (")) return std::nullopt;
    return out;
  }
  if (!after.substr(0, dots).empty() && !after.starts_with(" (")) return std::nullopt;
  out.has_result_part = true;
  out.rest = after.substr(dots + 4);
  return out;
}

// The status a line ends with: unittest prints the result after whatever the test wrote
// to the stream, possibly on the same line ("partialok").
std::optional<std::string> unittest_result(std::string_view line) {
  line = trim_view(line);
  if (line.ends_with("unexpected success")) return "failed";
  if (line.ends_with("expected failure")) return "skipped";
  if (line.ends_with("ok")) return "passed";
  if (line.ends_with("FAIL")) return "failed";
  if (line.ends_with("ERROR")) return "error";
  if (line == "skipped" || (line.ends_with("'") && line.rfind("skipped '") != std::string_view::npos)) return "skipped";
  return std::nullopt;
}

// How bad a result is within one test's lines: any later skip outranks an "ok" the test may
// have printed itself, failures outrank both.
int block_rank(const std::string& status) {
  if (status == "error") return 3;
  if (status == "failed") return 2;
  if (status == "skipped") return 1;
  return 0;
}

bool details_heading(std::string_view separator, std::string_view next) {
  return separator == std::string(70, '=') &&
         (next.starts_with("ERROR: ") || next.starts_with("FAIL: ") || next.starts_with("UNEXPECTED SUCCESS: "));
}

// "Ran 3 tests in 0.001s"
std::optional<long> ran_line(std::string_view line) {
  if (!line.starts_with("Ran ")) return std::nullopt;
  line.remove_prefix(4);
  size_t space = line.find(' ');
  if (space == std::string_view::npos || !all_digits(line.substr(0, space)) || space > 12) return std::nullopt;
  std::string_view rest = line.substr(space);
  if (!rest.starts_with(" tests in ") && !rest.starts_with(" test in ")) return std::nullopt;
  return std::strtol(std::string(line.substr(0, space)).c_str(), nullptr, 10);
}

// One test's lines: its description, what it wrote, its subtests, its result.
class UnittestBlock {
 public:
  bool open() const { return id_.has_value(); }
  const std::string& id() const { return *id_; }
  void start(std::string id) {
    id_ = std::move(id);
    status_.reset();
  }
  void result(const std::string& status) {
    if (!status_) {
      status_ = status;
    } else if (status != "error" && block_rank(status) > block_rank(*status_)) {
      // A bare ERROR after a test's result belongs to a class or module fixture (3.11
      // prints it there); the FAIL:/ERROR: headings after the run name every failure and
      // error, so only later skips and failures are taken from here.
      status_ = status;
    }
  }
  bool has_result() const { return status_.has_value(); }
  Status close(TestSet& set) {
    if (!id_) return {};
    // A test that printed no result never finished: the process died under it.
    Status st = set.add(*id_, status_.value_or("error"));
    id_.reset();
    return st;
  }

 private:
  std::optional<std::string> id_;
  std::optional<std::string> status_;
};

// --- ctest ---

// After "N/M Test #K: ": the name, a run of dots, then "   Passed" or "***Status".
std::optional<std::pair<std::string_view, std::string>> ctest_result(std::string_view rest) {
  for (size_t at = rest.find(" ."); at != std::string_view::npos; at = rest.find(" .", at + 1)) {
    size_t end = rest.find_first_not_of('.', at + 1);
    if (end == std::string_view::npos || at == 0) continue;
    std::string_view status = rest.substr(end);
    std::string_view name = rest.substr(0, at);
    if (status.starts_with("***")) {
      status.remove_prefix(3);
      if (status.starts_with("Failed")) return std::pair{name, std::string("failed")};
      if (status.starts_with("Skipped") || status.starts_with("Not Run (Disabled)")) return std::pair{name, std::string("skipped")};
      return std::pair{name, std::string("error")};  // Timeout, Exception, Not Run, ...
    }
    size_t word = status.find_first_not_of(' ');
    if (word == 0 || word == std::string_view::npos) continue;  // dots must be followed by spaces or ***
    status.remove_prefix(word);
    if (status.starts_with("Passed")) return std::pair{name, std::string("passed")};
    if (status.starts_with("Skipped")) return std::pair{name, std::string("skipped")};
    if (status.starts_with("Failed")) return std::pair{name, std::string("failed")};
  }
  return std::nullopt;
}

// "1/3 Test #1: " (indented when ctest aligns the counts); the rest of the line, or nothing.
std::optional<std::string_view> ctest_line(std::string_view line) {
  line = trim_view(line);
  size_t slash = line.find('/');
  if (slash == std::string_view::npos || !all_digits(line.substr(0, slash))) return std::nullopt;
  size_t test = line.find(" Test ", slash);
  if (test == std::string_view::npos || !all_digits(line.substr(slash + 1, test - slash - 1))) return std::nullopt;
  std::string_view after = trim_view(line.substr(test + 6));
  if (!after.starts_with("#")) return std::nullopt;
  size_t colon = after.find(": ");
  if (colon == std::string_view::npos || !all_digits(after.substr(1, colon - 1))) return std::nullopt;
  return after.substr(colon + 2);
}

std::string json_string(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<std::vector<TestCase>> parse_junit(std::string_view xml) {
  if (Status st = too_large(xml, "JUnit report"); !st) return std::unexpected(st.error());
  pugi::xml_document doc;
  pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return fail(Errc::invalid_argument,
                std::string("JUnit XML: ") + parsed.description() + " at byte " + std::to_string(parsed.offset));
  }
  pugi::xml_node root = doc.document_element();
  if (std::string_view(root.name()) != "testsuites" && std::string_view(root.name()) != "testsuite") {
    return fail(Errc::invalid_argument, "JUnit XML: the root element is <" + std::string(root.name()) +
                                            ">, not <testsuites> or <testsuite>");
  }
  TestSet set;
  for (const pugi::xpath_node& node : doc.select_nodes("//testcase")) {
    pugi::xml_node tc = node.node();
    std::string name = tc.attribute("name").value();
    if (name.empty()) return fail(Errc::invalid_argument, "JUnit XML: a <testcase> without a name");
    std::string classname = tc.attribute("classname").value();
    std::string status = tc.child("error")     ? "error"
                         : tc.child("failure") ? "failed"
                         : tc.child("skipped") ? "skipped"
                                               : "passed";
    if (Status st = set.add(classname.empty() ? name : classname + "::" + name, status); !st) return std::unexpected(st.error());
  }
  return set.take();
}

Result<std::vector<TestCase>> parse_tap(std::string_view text) {
  if (Status st = too_large(text, "TAP output"); !st) return std::unexpected(st.error());
  TestSet set;
  long plan = -1, seen = 0;
  bool bailed = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("Bail out!")) {
      bailed = true;
      break;
    }
    if (line.starts_with("1..")) {
      plan = std::strtol(std::string(line.substr(3)).c_str(), nullptr, 10);
      continue;
    }
    bool ok;
    if (line.starts_with("ok") && (line.size() == 2 || line[2] == ' ')) {
      ok = true;
      line.remove_prefix(2);
    } else if (line.starts_with("not ok") && (line.size() == 6 || line[6] == ' ')) {
      ok = false;
      line.remove_prefix(6);
    } else {
      continue;  // comments, diagnostics, indented subtests, YAML blocks
    }
    ++seen;
    std::string rest = trim(line);
    std::string number;
    while (!rest.empty() && std::isdigit(static_cast<unsigned char>(rest[0]))) {
      number += rest[0];
      rest.erase(0, 1);
    }
    std::string directive;
    if (size_t hash = rest.find(" # "); hash != std::string::npos || rest.starts_with("# ")) {
      size_t at = hash == std::string::npos ? 0 : hash + 1;
      directive = trim(std::string_view(rest).substr(at + 1));
      rest = rest.substr(0, at);
    }
    rest = trim(rest);
    if (rest.starts_with("- ")) rest = trim(std::string_view(rest).substr(2));
    else if (rest == "-") rest.clear();
    std::string id = rest.empty() ? "#" + (number.empty() ? std::to_string(seen) : number) : rest;
    std::string status = ok ? "passed" : "failed";
    if (starts_with_ci(directive, "skip")) status = "skipped";
    else if (starts_with_ci(directive, "todo")) status = ok ? "passed" : "skipped";
    if (Status st = set.add(id, status); !st) return std::unexpected(st.error());
  }
  if (bailed) {
    if (Status st = set.add("bail_out", "error"); !st) return std::unexpected(st.error());
  } else if (plan >= 0 && seen < plan) {
    if (Status st = set.add("plan", "error"); !st) return std::unexpected(st.error());
  }
  return set.take();
}

Result<std::vector<TestCase>> parse_unittest(std::string_view text) {
  if (Status st = too_large(text, "unittest output"); !st) return std::unexpected(st.error());
  TestSet set;
  UnittestBlock block;
  bool details = false, any_test_line = false;
  std::optional<long> ran;
  Lines lines(text);
  std::string_view line;
  while (!ran && lines.next(line)) {
    if (auto n = ran_line(line)) {
      ran = *n;
      break;
    }
    if (details_heading(line, lines.peek())) {
      details = true;
      lines.next(line);
      size_t colon = line.find(": ");
      std::string_view kind = line.substr(0, colon);
      if (auto heading = unittest_line(line.substr(colon + 2))) {
        if (Status st = set.add(heading->id, kind == "ERROR" ? "error" : "failed"); !st) return std::unexpected(st.error());
      }
      continue;
    }
    if (details) continue;  // tracebacks
    // A subtest is indented by two spaces; its result is its test's.
    bool indented = line.starts_with("  ");
    auto test = unittest_line(indented ? line.substr(2) : line);
    if (test && !indented) {
      if (Status st = block.close(set); !st) return std::unexpected(st.error());
      block.start(test->id);
      any_test_line = true;
    }
    if (test && block.open() && test->id == block.id()) {
      if (auto status = unittest_result(test->rest); status && test->has_result_part) block.result(*status);
      continue;
    }
    // A docstring's line, output the test wrote, or the result on a line of its own.
    if (block.open()) {
      if (auto status = unittest_result(line)) block.result(*status);
    }
  }
  if (Status st = block.close(set); !st) return std::unexpected(st.error());
  if (ran && *ran > 0 && !any_test_line) {
    return fail(Errc::invalid_argument, "unittest ran " + std::to_string(*ran) +
                                            " tests but named none: run it with -v so its output names each test");
  }
  // Without its summary the run ended early: the tests it never reached are not here.
  if (!ran) {
    if (Status st = set.add("summary", "error"); !st) return std::unexpected(st.error());
  }
  return set.take();
}

Result<std::vector<TestCase>> parse_ctest(std::string_view text) {
  if (Status st = too_large(text, "ctest output"); !st) return std::unexpected(st.error());
  TestSet set;
  Lines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    auto rest = ctest_line(line);
    if (!rest) continue;
    auto result = ctest_result(*rest);
    if (!result) continue;
    if (Status st = set.add(std::string(result->first), result->second); !st) return std::unexpected(st.error());
  }
  return set.take();
}

Result<std::vector<TestCase>> parse_go_test_json(std::string_view text) {
  if (Status st = too_large(text, "go test -json output"); !st) return std::unexpected(st.error());
  TestSet set;
  std::map<std::string, std::string> running;  // id -> package
  std::set<std::string> failed_packages, packages_with_failures;
  Lines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    line = trim_view(line);
    if (!line.starts_with("{")) continue;
    auto event = parse_json(line, "go test event");
    if (!event || !event->is_object()) continue;
    std::string action = json_string(*event, "Action"), test = json_string(*event, "Test"),
                package = json_string(*event, "Package");
    if (action == "build-fail") {
      std::string path = json_string(*event, "ImportPath");
      if (Status st = set.add(path.empty() ? "build" : path, "error"); !st) return std::unexpected(st.error());
      continue;
    }
    if (test.empty()) {
      if (action == "fail") failed_packages.insert(package);
      continue;
    }
    std::string id = package.empty() ? test : package + "::" + test;
    std::string status = action == "pass" ? "passed" : action == "fail" ? "failed" : action == "skip" ? "skipped" : "";
    if (action == "run") {
      running.emplace(id, package);
      if (running.size() > kMaxReportTests) return fail(Errc::limit_exceeded, "more than " + std::to_string(kMaxReportTests) + " tests");
    }
    if (status.empty()) continue;
    running.erase(id);
    if (status == "failed") packages_with_failures.insert(package);
    if (Status st = set.add(id, status); !st) return std::unexpected(st.error());
  }
  // A test that started and never ended, or a package that failed with no failing test (a
  // panic outside a test, a TestMain that exited, a build failure): neither is a pass.
  for (const auto& [id, package] : running) {
    packages_with_failures.insert(package);
    if (Status st = set.add(id, "error"); !st) return std::unexpected(st.error());
  }
  for (const auto& package : failed_packages) {
    if (packages_with_failures.contains(package)) continue;
    if (Status st = set.add(package.empty() ? "package" : package, "error"); !st) return std::unexpected(st.error());
  }
  return set.take();
}

Result<std::vector<TestCase>> parse_report(std::string_view format, std::string_view text) {
  if (format == "junit" || format == "pytest") return parse_junit(text);
  if (format == "tap") return parse_tap(text);
  if (format == "unittest") return parse_unittest(text);
  if (format == "ctest") return parse_ctest(text);
  if (format == "go-json") return parse_go_test_json(text);
  return fail(Errc::invalid_argument, "no parser for report format \"" + std::string(format) + "\"");
}

bool no_test_ran(const std::vector<TestCase>& tests) {
  return std::all_of(tests.begin(), tests.end(), [](const TestCase& t) { return t.status == "skipped"; });
}

TestJudgement judge_tests(const std::vector<TestCase>& tests, const std::vector<std::string>& fail_to_pass,
                          const std::vector<std::string>& pass_to_pass) {
  std::map<std::string, std::string> status;
  for (const auto& t : tests) status[t.id] = t.status;
  TestJudgement j;
  j.ok = true;
  auto judge = [&](const std::vector<std::string>& ids, std::vector<TestJudgement::Item>& out) {
    for (const auto& id : ids) {
      auto it = status.find(id);
      std::string s = it == status.end() ? "missing" : it->second;
      if (s != "passed") j.ok = false;
      out.push_back({id, s});
    }
  };
  judge(fail_to_pass, j.fail_to_pass);
  judge(pass_to_pass, j.pass_to_pass);
  return j;
}

}  // namespace warden
