#include "kernel/judge/dangerous_ops.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>
#include <memory>
#include <set>
#include <span>

#include <re2/re2.h>
#include <re2/set.h>

#include "common/canonical_json.h"
#include "kernel/judge/source_text.h"

namespace warden::kernel {
namespace {

struct Rule {
  std::string_view id;
  std::string_view category;  // kCategories
  std::string_view pattern;
  std::string_view unless = {};  // the finding is dropped when this also matches the line
  // Matched on the line as written (string contents kept: the name a lookup asks for is a
  // string), where the line holds code; else on the code with strings emptied.
  bool raw = false;
};

struct Category {
  std::string_view name;
  std::string_view rule_class;  // "safety": every scan runs it; "lint": a policy names it
};

constexpr Category kCategories[] = {
    {"process_execution", "safety"}, {"code_execution", "safety"}, {"deserialization", "safety"},
    {"network", "safety"},           {"filesystem", "safety"},     {"test_tampering", "safety"},
    {"test_detection", "safety"},    {"unbounded_buffer", "lint"}, {"inline_asm", "lint"},
};

// "Not called as a method": the name follows neither a word character nor '.'.
#define WARDEN_PY_CALL(name) "(?:^|[^\\w.])" name "\\s*\\("
// C: neither a word character, '.' nor '->'; '::' (std::system) still counts.
#define WARDEN_C_CALL(name) "(?:^|[^\\w.>])" name "\\s*\\("

constexpr Rule kPythonRules[] = {
    {"py.eval", "code_execution", WARDEN_PY_CALL("eval"), R"(\bdef\s+eval\s*\()"},
    {"py.exec", "code_execution", WARDEN_PY_CALL("exec"), R"(\bdef\s+exec\s*\()"},
    {"py.compile", "code_execution", WARDEN_PY_CALL("compile"), R"(\bdef\s+compile\s*\()"},
    {"py.dunder_import", "code_execution", WARDEN_PY_CALL("__import__"), R"(\bdef\s+__import__\s*\()"},
    {"py.os_system", "process_execution", R"(\bos\s*\.\s*system\s*\()"},
    {"py.os_popen", "process_execution", R"(\bos\s*\.\s*popen\s*\()"},
    {"py.subprocess_shell", "process_execution", R"(\bsubprocess\s*\.\s*\w+\s*\(.*\bshell\s*=\s*True\b)"},
    {"py.pickle_load", "deserialization", R"(\b(?:cPickle|pickle)\s*\.\s*loads?\s*\()"},
    {"py.marshal_load", "deserialization", R"(\bmarshal\s*\.\s*loads?\s*\()"},
    {"py.yaml_load", "deserialization", R"(\byaml\s*\.\s*load\s*\()", R"(\bSafeLoader\b)"},
    // Code under test shares its process with the test runner: rebinding the framework's
    // parts, ending the process before the runner reports, or taking over its streams.
    {"py.patch_test_framework", "test_tampering", R"(\b(?:unittest|TestCase|TestResult|TextTestRunner|pytest|_pytest)(?:\s*\.\s*\w+)+[\s)]*=(?:[^=]|$))"},
    {"py.setattr_test_framework", "test_tampering", R"(\bsetattr\s*\(\s*(?:unittest|TestCase|TestResult|pytest|_pytest)\b)"},
    {"py.os_exit", "test_tampering", R"(\bos\s*\.\s*_exit\s*\()"},
    // The test runner is the __main__ module: reaching it is reaching the runner's objects.
    {"py.runner_module", "test_tampering",
     R"(\bsys\s*\.\s*modules\s*\[\s*['"](?:__main__|unittest|pytest|_pytest)|\bimport\s+__main__\b|\bfrom\s+__main__\b)", {},
     true},
    {"py.replace_std_stream", "test_tampering", R"(\bsys\s*\.\s*(?:stdout|stderr|__stdout__|__stderr__)\s*=(?:[^=]|$))"},
    // Code that asks whether it is under test can pass the tests and fail everyone else.
    {"py.test_module_lookup", "test_detection",
     R"(['"](?:unittest|pytest|_pytest|doctest|nose2?)(?:\.\w+)*['"]\s*(?:not\s+)?in\s+sys\s*\.\s*modules|\bsys\s*\.\s*modules\s*(?:\.\s*(?:get|pop|setdefault|__contains__)\s*\(|\[)\s*['"](?:unittest|pytest|_pytest|doctest|nose2?)\b)",
     {}, true},
    {"py.frame_inspection", "test_detection",
     R"(\bfrom\s+(?:sys|inspect|traceback)\s+import\b.*\b(?:_getframe|stack|currentframe|getouterframes|extract_stack|walk_stack|modules)\b|\bsys\s*\.\s*(?:_getframe|_current_frames)\s*\(|\binspect\s*\.\s*(?:stack|currentframe|getouterframes|getframeinfo|trace)\s*\(|\btraceback\s*\.\s*(?:extract_stack|walk_stack|format_stack|print_stack)\s*\(|\.\s*f_back\b)"},
    {"py.test_env", "test_detection", R"(\b(?:PYTEST_CURRENT_TEST|PYTEST_XDIST_WORKER|PYTEST_VERSION|PYTEST_ADDOPTS|UNITTEST_\w+|WARDEN_\w+)\b)", {}, true},
    {"py.argv_test_runner", "test_detection",
     R"(\bsys\s*\.\s*(?:argv|orig_argv)\b.*['"][^'"]*(?:pytest|unittest|py\.test|nose)|['"][^'"]*(?:pytest|unittest|py\.test|nose)[^'"]*['"].*\bsys\s*\.\s*(?:argv|orig_argv)\b)",
     {}, true},
    // A comparison that answers the same whatever it compares passes any assertEqual.
    {"py.constant_eq", "test_detection",
     R"(\bdef\s+__(?:eq|ne)__\s*\([^)]*\)\s*(?:->\s*\w+\s*)?:\s*return\s+(?:True|False|1|0)\s*$|\b__(?:eq|ne)__\s*=\s*lambda[^:]*:\s*(?:True|False|1|0)\s*$)"},
};

constexpr Rule kCRules[] = {
    {"c.system", "process_execution", WARDEN_C_CALL("system")},
    {"c.popen", "process_execution", WARDEN_C_CALL("popen")},
    {"c.exec", "process_execution", WARDEN_C_CALL("exec[lv]p?e?")},
    // Code run before main (a library constructor can print a passing report and exit before
    // any test runs), and ending the process without unwinding.
    {"c.constructor", "test_tampering", R"((?:__attribute__\s*\(\s*\(|\[\[\s*(?:gnu|clang)\s*::)[^;{]*\b(?:__)?(?:constructor|destructor)\b)"},
    {"c.exit_process", "test_tampering", WARDEN_C_CALL("(?:exit|_exit|_Exit|quick_exit)")},
    {"c.test_env", "test_detection",
     R"(\b(?:getenv|secure_getenv|std\s*::\s*getenv)\s*\(\s*"(?:[A-Z0-9_]*_)?(?:TEST|TESTS|CTEST|GTEST|UNITY|CMOCKA|CK|CHECK|WARDEN)(?:_[A-Z0-9_]*)?")",
     {}, true},
    {"c.caller_address", "test_detection",
     R"(\b__builtin_(?:return|frame)_address\s*\(|(?:^|[^\w.>])(?:backtrace|backtrace_symbols|dladdr)\s*\()"},
    {"c.gets", "unbounded_buffer", WARDEN_C_CALL("gets")},
    {"c.strcpy", "unbounded_buffer", WARDEN_C_CALL("strcpy")},
    {"c.strcat", "unbounded_buffer", WARDEN_C_CALL("strcat")},
    {"c.sprintf", "unbounded_buffer", WARDEN_C_CALL("sprintf")},
    {"c.vsprintf", "unbounded_buffer", WARDEN_C_CALL("vsprintf")},
    {"c.asm", "inline_asm", R"((?:^|[^\w.>])(?:asm|__asm__|__asm)\s*(?:(?:volatile|__volatile__|goto|inline)\s*)*[({])"},
};

constexpr Rule kGoRules[] = {
    {"go.testing_testing", "test_detection", R"(\btesting\s*\.\s*Testing\s*\()"},
    {"go.test_flag", "test_detection", R"(\.\s*Lookup\s*\(\s*"test\.|\bos\s*\.\s*Args\b.*"[^"]*\.test\b)", {}, true},
    {"go.caller", "test_detection", R"(\bruntime\s*\.\s*(?:Caller|Callers|Stack)\s*\(|\bdebug\s*\.\s*Stack\s*\()"},
};

constexpr Rule kJavaScriptRules[] = {
    {"js.test_env", "test_detection",
     R"(\b(?:JEST_WORKER_ID|VITEST(?:_\w+)?|MOCHA_\w+|AVA_\w+)\b|\bNODE_ENV\b\s*[!=]==?\s*['"]test['"]|['"]test['"]\s*[!=]==?\s*process\s*\.\s*env\s*(?:\.\s*NODE_ENV|\[\s*['"]NODE_ENV))",
     {}, true},
    {"js.test_globals", "test_detection",
     R"(\btypeof\s+(?:globalThis\s*\.\s*)?(?:jest|describe|it|expect|vi|mocha)\b|\bglobalThis\s*\.\s*(?:jest|vi|describe|expect)\b|['"](?:jest|vi|describe|it|expect)['"]\s*in\s+globalThis\b)",
     {}, true},
};

constexpr Rule kShellRules[] = {
    {"sh.curl_pipe_sh", "network", R"(\b(?:curl|wget)\b.*\|\s*(?:sudo\s+)?(?:\S*/)?(?:ba|z|k|da)?sh\b)"},
    {"sh.rm_rf_root", "filesystem", R"(\brm\s+(?:-\S+\s+)+["']?/\*?["']?(?:[\s;&|)]|$))"},
    {"sh.eval", "code_execution", R"((?:^|[\s;&|(])eval(?:\s|$))"},
};

#undef WARDEN_PY_CALL
#undef WARDEN_C_CALL

RE2::Options rule_options() {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(32 << 20);
  return options;
}

std::unique_ptr<RE2> compiled(std::string_view pattern) {
  auto re = std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), rule_options());
  // The patterns are constants of this file: a failure is a bug the tests catch at once.
  if (!re->ok()) std::abort();
  return re;
}

// How many times `re` matches `code`, one match after another. At least once: the caller
// knows it matches.
uint64_t count_matches(const RE2& re, std::string_view code) {
  re2::StringPiece input(code.data(), code.size());
  uint64_t n = 0;
  while (!input.empty()) {
    const char* before = input.data();
    if (!RE2::FindAndConsume(&input, re) || input.data() == before) break;
    ++n;
  }
  return std::max<uint64_t>(n, 1);
}

struct RuleMatch {
  std::string_view id;
  uint64_t count = 1;  // calls of it on the line
};

// One language's rules compiled once: the set finds every matching rule in one pass, the
// rule's own pattern counts its calls on a line that matched.
class RuleSet {
 public:
  explicit RuleSet(std::span<const Rule> rules)
      : rules_(rules), set_(rule_options(), RE2::UNANCHORED), raw_set_(rule_options(), RE2::UNANCHORED) {
    for (size_t i = 0; i < rules_.size(); ++i) {
      const Rule& rule = rules_[i];
      RE2::Set& set = rule.raw ? raw_set_ : set_;
      if (set.Add(re2::StringPiece(rule.pattern.data(), rule.pattern.size()), nullptr) < 0) std::abort();
      (rule.raw ? raw_index_ : code_index_).push_back(i);
      patterns_.push_back(compiled(rule.pattern));
      unless_.push_back(rule.unless.empty() ? nullptr : compiled(rule.unless));
    }
    if (!set_.Compile() || !raw_set_.Compile()) std::abort();
  }

  // The rules `selected` runs that match one line (`code` its code with strings emptied,
  // `raw` as written), in table order.
  std::vector<RuleMatch> match(std::string_view code, std::string_view raw, const DangerRules& selected) const {
    std::set<size_t> ordered;
    std::vector<int> hits;
    if (set_.Match(re2::StringPiece(code.data(), code.size()), &hits)) {
      for (int i : hits) ordered.insert(code_index_[static_cast<size_t>(i)]);
    }
    hits.clear();
    const bool has_code = code.find_first_not_of(" \t\r\f\v") != std::string_view::npos;
    if (has_code && raw_set_.Match(re2::StringPiece(raw.data(), raw.size()), &hits)) {
      for (int i : hits) ordered.insert(raw_index_[static_cast<size_t>(i)]);
    }
    std::vector<RuleMatch> out;
    for (size_t at : ordered) {
      if (!selected.runs(rules_[at].id)) continue;
      std::string_view text = rules_[at].raw ? raw : code;
      if (unless_[at] && RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *unless_[at])) continue;
      out.push_back({rules_[at].id, count_matches(*patterns_[at], text)});
    }
    return out;
  }

 private:
  std::span<const Rule> rules_;
  RE2::Set set_, raw_set_;
  std::vector<size_t> code_index_, raw_index_;  // a set's pattern index -> the rule's
  std::vector<std::unique_ptr<RE2>> patterns_, unless_;
};

// Compiled on first use and immutable afterwards; RE2 matching is thread-safe.
const RuleSet* rules_for(SourceLanguage language) {
  static const RuleSet python(kPythonRules), c(kCRules), shell(kShellRules), go(kGoRules), javascript(kJavaScriptRules);
  switch (language) {
    case SourceLanguage::python: return &python;
    case SourceLanguage::c_family: return &c;
    case SourceLanguage::shell: return &shell;
    case SourceLanguage::go: return &go;
    case SourceLanguage::javascript: return &javascript;
    case SourceLanguage::other: break;
  }
  return nullptr;
}

std::string_view class_of(std::string_view category) {
  for (const Category& c : kCategories) {
    if (c.name == category) return c.rule_class;
  }
  std::abort();  // every rule names a category of the table: a bug the tests catch
}

// Every rule of every language, for selection.
template <typename F>
void for_each_rule(F&& f) {
  for (std::span<const Rule> table : {std::span<const Rule>(kPythonRules), std::span<const Rule>(kCRules),
                                      std::span<const Rule>(kShellRules), std::span<const Rule>(kGoRules),
                                      std::span<const Rule>(kJavaScriptRules)}) {
    for (const Rule& rule : table) f(rule);
  }
}

std::string excerpt_of(std::string_view line) {
  constexpr size_t kMax = 120;
  size_t begin = line.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  size_t end = line.find_last_not_of(" \t\r") + 1;
  std::string_view text = line.substr(begin, end - begin);
  bool cut = text.size() > kMax;
  if (cut) {
    size_t n = kMax;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a character
    text = text.substr(0, n);
  }
  std::string out(text);
  if (!is_valid_utf8(out)) {
    for (char& c : out) {
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    }
  }
  return cut ? out + "..." : out;
}

struct NumberedLine {
  uint64_t number;
  std::string_view text;
};

std::vector<NumberedLine> numbered(std::string_view text) {
  std::vector<NumberedLine> out;
  uint64_t n = 0;
  for (std::string_view line : split_lines(text)) out.push_back({++n, line});
  return out;
}

// A rule's calls on one line: `key` is the line's code without whitespace, what an
// occurrence keeps when it is moved, re-indented or reformatted.
struct Occurrence {
  uint64_t line;
  std::string_view rule;
  uint64_t count;
  std::string key;
  std::string_view text;  // the line as written
};

std::string without_space(std::string_view code) {
  std::string out;
  for (char c : code) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v') out += c;
  }
  return out;
}

// Lexes `lines` in order (the stripper carries comments and strings across them).
std::vector<Occurrence> occurrences(std::string_view path, const std::vector<NumberedLine>& lines, const DangerRules& selected) {
  std::vector<Occurrence> out;
  SourceLanguage language = source_language(path);
  const RuleSet* rules = rules_for(language);
  if (!rules) return out;
  CodeStripper stripper(language);
  // Python: `def __eq__(...):` whose body's first statement returns a constant, over two lines.
  const NumberedLine* open_eq = nullptr;
  std::string open_eq_code;
  for (const NumberedLine& line : lines) {
    std::string code = stripper.strip(line.text);
    for (const RuleMatch& m : rules->match(code, line.text, selected)) out.push_back({line.number, m.id, m.count, without_space(code), line.text});
    if (language != SourceLanguage::python || !selected.runs("py.constant_eq")) continue;
    if (open_eq && code.find_first_not_of(" \t") != std::string::npos) {
      if (RE2::FullMatch(code, R"(\s*return\s+(?:True|False|1|0)\s*)")) {
        out.push_back({open_eq->number, "py.constant_eq", 1, without_space(open_eq_code) + "\n" + without_space(code), open_eq->text});
      }
      open_eq = nullptr;
    }
    if (RE2::FullMatch(code, R"(\s*def\s+__(?:eq|ne)__\s*\([^)]*\)\s*(?:->\s*\w+\s*)?:\s*)")) {
      open_eq = &line;
      open_eq_code = code;
    }
  }
  return out;
}

DangerFinding finding(std::string_view path, const Occurrence& o) {
  return DangerFinding{std::string(path), o.line, std::string(o.rule), excerpt_of(o.text)};
}

std::vector<DangerFinding> findings(std::string_view path, const std::vector<Occurrence>& found) {
  std::vector<DangerFinding> out;
  for (const Occurrence& o : found) out.push_back(finding(path, o));
  return out;
}

std::string_view hunk_line_text(const std::string& line) {
  std::string_view text = std::string_view(line).substr(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

}  // namespace

DangerRules::DangerRules() : DangerRules(std::vector<std::string>{}) {}

DangerRules::DangerRules(const std::vector<std::string>& selectors, const std::vector<std::string>& waived) {
  auto named = [&](std::string_view name) { return std::find(selectors.begin(), selectors.end(), name) != selectors.end(); };
  for_each_rule([&](const Rule& rule) {
    std::string_view rule_class = class_of(rule.category);
    const bool off = std::find(waived.begin(), waived.end(), rule.id) != waived.end();
    if (!off && (rule_class == "safety" || named(rule.id) || named(rule.category) || named(rule_class))) ids_.emplace(rule.id);
  });
}

bool is_danger_rule_id(std::string_view name) {
  bool found = false;
  for_each_rule([&](const Rule& rule) { found = found || name == rule.id; });
  return found;
}

std::string_view danger_rule_category(std::string_view rule) {
  std::string_view out;
  for_each_rule([&](const Rule& r) {
    if (r.id == rule) out = r.category;
  });
  return out;
}

bool is_danger_rule_selector(std::string_view name) {
  bool found = false;
  for_each_rule([&](const Rule& rule) {
    found = found || name == rule.id || name == rule.category || name == class_of(rule.category);
  });
  return found;
}

std::vector<DangerFinding> scan_source(std::string_view path, std::string_view text, const DangerRules& rules) {
  return findings(path, occurrences(path, numbered(text), rules));
}

std::set<uint64_t> added_lines(const FileChange& file) {
  std::set<uint64_t> out;
  if (file.op == FileOp::remove) return out;
  if (file.after_content) {
    for (uint64_t n = 1; n <= split_lines(*file.after_content).size(); ++n) out.insert(n);
    return out;
  }
  for (const Hunk& hunk : file.hunks) {
    uint64_t n = hunk.new_start;
    for (const std::string& line : hunk.lines) {
      if (line.empty() || line[0] == '-') continue;
      if (line[0] == '+') out.insert(n);
      ++n;
    }
  }
  return out;
}

std::vector<DangerFinding> scan_added_lines(const FileChange& file, const DangerRules& rules) {
  if (file.op == FileOp::remove) return {};
  if (file.after_content) return scan_source(file.path, *file.after_content, rules);
  std::vector<NumberedLine> added;
  for (const Hunk& hunk : file.hunks) {
    uint64_t n = hunk.new_start;
    for (const std::string& line : hunk.lines) {
      if (line.empty() || line[0] == '-') continue;
      if (line[0] == '+') added.push_back({n, hunk_line_text(line)});
      ++n;
    }
  }
  return findings(file.path, occurrences(file.path, added, rules));
}

std::vector<DangerFinding> introduced_operations(std::string_view path, std::string_view pre_image, std::string_view post_image,
                                                 const std::set<uint64_t>& added, const DangerRules& rules) {
  const std::vector<NumberedLine> pre_lines = numbered(pre_image), post_lines = numbered(post_image);
  std::map<std::string_view, int64_t> growth;  // rule -> post count - pre count
  std::map<std::pair<std::string_view, std::string>, uint64_t> unmatched_before;
  for (Occurrence& o : occurrences(path, pre_lines, rules)) {
    growth[o.rule] -= static_cast<int64_t>(o.count);
    unmatched_before[{o.rule, std::move(o.key)}] += o.count;
  }
  // The post-image's calls that match none of the pre-image's, with how many on the line.
  // Lines the diff leaves alone are matched first, so when a call is duplicated, the copy the
  // diff wrote is the new one.
  std::vector<Occurrence> after = occurrences(path, post_lines, rules);
  std::stable_partition(after.begin(), after.end(), [&](const Occurrence& o) { return !added.contains(o.line); });
  std::vector<std::pair<Occurrence, uint64_t>> candidates;
  for (Occurrence& o : after) {
    growth[o.rule] += static_cast<int64_t>(o.count);
    uint64_t& left = unmatched_before[{o.rule, o.key}];
    const uint64_t matched = std::min(left, o.count), unmatched = o.count - matched;
    left -= matched;
    if (unmatched > 0) candidates.emplace_back(std::move(o), unmatched);
  }
  // Of those, the ones on lines the diff wrote are reported first.
  std::stable_partition(candidates.begin(), candidates.end(), [&](const auto& c) { return added.contains(c.first.line); });
  std::vector<Occurrence> introduced;
  for (auto& [o, unmatched] : candidates) {
    int64_t& grows = growth[o.rule];
    if (grows <= 0) continue;
    grows -= static_cast<int64_t>(unmatched);
    introduced.push_back(std::move(o));
  }
  std::sort(introduced.begin(), introduced.end(),
            [](const Occurrence& a, const Occurrence& b) { return std::tie(a.line, a.rule) < std::tie(b.line, b.rule); });
  return findings(path, introduced);
}

std::string describe(const DangerFinding& finding) {
  return finding.path + ":" + std::to_string(finding.line) + " " + finding.rule + " `" + finding.excerpt + "`";
}

}  // namespace warden::kernel
