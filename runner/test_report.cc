#include "runner/test_report.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <map>

#include "runner/output_capture.h"

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

}  // namespace

Result<std::vector<TestCase>> parse_junit(std::string_view xml) {
  if (xml.size() > kMaxReportBytes) return fail(Errc::limit_exceeded, "JUnit report larger than 16 MiB");
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
  if (text.size() > kMaxReportBytes) return fail(Errc::limit_exceeded, "TAP output larger than 16 MiB");
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
