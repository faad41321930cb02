#include "kernel/judge/check_evidence.h"

#include <optional>

namespace warden::kernel {
namespace {

// The last `lines` lines of `text`: what a person reads first under a failure.
std::string last_lines(const std::string& text, size_t lines) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  size_t pos = end;
  for (size_t seen = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++seen == lines) break;
  }
  return text.substr(pos, end - pos);
}

std::string indented(const std::string& text, const std::string& prefix) {
  std::string out = prefix;
  for (char c : text) {
    out += c;
    if (c == '\n') out += prefix;
  }
  return out;
}

// The end of a captured stream as recorded: its tail, or all of it when it fit in the head.
std::string ending(const OutputEvidence& o) { return o.tail.empty() ? o.head : o.tail; }

}  // namespace

Json CheckEvidence::to_json() const {
  Json tests = Json::array();
  for (const TestCase& t : failing_tests) tests.push_back({{"id", t.id}, {"status", t.status}});
  Json j = {{"check", check},
            {"verdict", verdict},
            {"exit_code", exit_code},
            {"failing_tests", tests},
            {"stdout_tail", stdout_tail},
            {"stderr_tail", stderr_tail},
            {"stdout_blob", stdout_blob.str()},
            {"stderr_blob", stderr_blob.str()},
            {"report_detail", report_detail}};
  if (report_blob) j["report_blob"] = report_blob->str();
  return j;
}

std::vector<CheckEvidence> checks_not_passing(const RunResult& run) {
  std::vector<CheckEvidence> out;
  for (const CheckResult& c : run.checks) {
    CheckEvidence e;
    e.check = c.name;
    e.verdict = c.verdict;
    for (const TestCase& t : c.tests) {
      if (t.status == "failed" || t.status == "error") e.failing_tests.push_back(t);
    }
    if (c.verdict == kPassed && e.failing_tests.empty()) continue;
    if (!c.runs.empty()) {
      const CheckRun& first = c.runs.front();
      e.exit_code = first.exit_code;
      e.stdout_tail = ending(first.out);
      e.stderr_tail = ending(first.err);
      e.stdout_blob = first.out.blob;
      e.stderr_blob = first.err.blob;
      e.report_blob = first.report_blob;
      e.report_detail = !first.error.empty() ? first.error : first.report_detail;
    }
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// A module the checked code asked for and its sandbox does not hold, as Python and Node say
// it ("No module named 'x'", "Cannot find module 'x'"); a relative path is the project's own.
std::optional<std::string> missing_module(const CheckEvidence& e) {
  for (const std::string* tail : {&e.stderr_tail, &e.stdout_tail}) {
    for (std::string_view marker : {"No module named '", "Cannot find module '"}) {
      size_t at = tail->find(marker);
      if (at == std::string::npos) continue;
      size_t start = at + marker.size(), end = tail->find('\'', start);
      if (end == std::string::npos || end == start) continue;
      std::string name = tail->substr(start, end - start);
      if (name.starts_with('.') || name.starts_with('/')) continue;
      return name;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string describe(const CheckEvidence& e, std::string_view ledger) {
  constexpr size_t kTailLines = 12;
  constexpr size_t kMaxTests = 20;
  std::string out = e.check + " " + e.verdict + " (exit " + std::to_string(e.exit_code) + ")";
  if (!e.report_detail.empty()) out += ": " + e.report_detail;
  out += "\n";
  for (size_t i = 0; i < e.failing_tests.size() && i < kMaxTests; ++i) {
    out += "  " + e.failing_tests[i].status + ": " + e.failing_tests[i].id + "\n";
  }
  if (e.failing_tests.size() > kMaxTests) out += "  and " + std::to_string(e.failing_tests.size() - kMaxTests) + " more\n";
  for (const auto& [name, tail, blob] : {std::tuple{"stderr", &e.stderr_tail, &e.stderr_blob}, std::tuple{"stdout", &e.stdout_tail, &e.stdout_blob}}) {
    if (tail->empty()) continue;
    out += std::string("  ") + name + " (last lines; all of it: warden ledger blob get " + std::string(ledger) + " " + blob->str() + "):\n";
    out += indented(last_lines(*tail, kTailLines), "    | ") + "\n";
  }
  if (auto module = missing_module(e)) {
    out += "  the checked code needs the module " + *module +
           ", which the sandbox does not hold: checks see the host's /usr, or an environment's; give the run an "
           "environment that has it (docs/environments.md)\n";
  }
  return out;
}

}  // namespace warden::kernel
