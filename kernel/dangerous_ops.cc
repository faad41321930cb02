#include "kernel/dangerous_ops.h"

#include <cstdlib>
#include <memory>
#include <set>
#include <span>

#include <re2/re2.h>
#include <re2/set.h>

#include "common/canonical_json.h"
#include "kernel/source_text.h"

namespace warden::kernel {
namespace {

struct Rule {
  std::string_view id;
  std::string_view pattern;
  std::string_view unless = {};  // the finding is dropped when this also matches the line
};

// "Not called as a method": the name follows neither a word character nor '.'.
#define WARDEN_PY_CALL(name) "(?:^|[^\\w.])" name "\\s*\\("
// C: neither a word character, '.' nor '->'; '::' (std::system) still counts.
#define WARDEN_C_CALL(name) "(?:^|[^\\w.>])" name "\\s*\\("

constexpr Rule kPythonRules[] = {
    {"py.eval", WARDEN_PY_CALL("eval"), R"(\bdef\s+eval\s*\()"},
    {"py.exec", WARDEN_PY_CALL("exec"), R"(\bdef\s+exec\s*\()"},
    {"py.compile", WARDEN_PY_CALL("compile"), R"(\bdef\s+compile\s*\()"},
    {"py.dunder_import", WARDEN_PY_CALL("__import__"), R"(\bdef\s+__import__\s*\()"},
    {"py.os_system", R"(\bos\s*\.\s*system\s*\()"},
    {"py.os_popen", R"(\bos\s*\.\s*popen\s*\()"},
    {"py.subprocess_shell", R"(\bsubprocess\s*\.\s*\w+\s*\(.*\bshell\s*=\s*True\b)"},
    {"py.pickle_load", R"(\b(?:cPickle|pickle)\s*\.\s*loads?\s*\()"},
    {"py.marshal_load", R"(\bmarshal\s*\.\s*loads?\s*\()"},
    {"py.yaml_load", R"(\byaml\s*\.\s*load\s*\()", R"(\bSafeLoader\b)"},
};

constexpr Rule kCRules[] = {
    {"c.system", WARDEN_C_CALL("system")},
    {"c.popen", WARDEN_C_CALL("popen")},
    {"c.gets", WARDEN_C_CALL("gets")},
    {"c.strcpy", WARDEN_C_CALL("strcpy")},
    {"c.strcat", WARDEN_C_CALL("strcat")},
    {"c.sprintf", WARDEN_C_CALL("sprintf")},
    {"c.vsprintf", WARDEN_C_CALL("vsprintf")},
    {"c.exec", WARDEN_C_CALL("exec[lv]p?e?")},
    {"c.asm", R"((?:^|[^\w.>])(?:asm|__asm__|__asm)\s*(?:(?:volatile|__volatile__|goto|inline)\s*)*[({])"},
};

constexpr Rule kShellRules[] = {
    {"sh.curl_pipe_sh", R"(\b(?:curl|wget)\b.*\|\s*(?:sudo\s+)?(?:\S*/)?(?:ba|z|k|da)?sh\b)"},
    {"sh.rm_rf_root", R"(\brm\s+(?:-\S+\s+)+["']?/\*?["']?(?:[\s;&|)]|$))"},
    {"sh.eval", R"((?:^|[\s;&|(])eval(?:\s|$))"},
};

#undef WARDEN_PY_CALL
#undef WARDEN_C_CALL

RE2::Options rule_options() {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(32 << 20);
  return options;
}

// One language's rules compiled once: the set finds every matching rule in one pass.
class RuleSet {
 public:
  explicit RuleSet(std::span<const Rule> rules) : rules_(rules), set_(rule_options(), RE2::UNANCHORED) {
    for (const Rule& rule : rules_) {
      // The patterns are constants of this file: a failure is a bug the tests catch at once.
      if (set_.Add(re2::StringPiece(rule.pattern.data(), rule.pattern.size()), nullptr) < 0) std::abort();
      unless_.push_back(rule.unless.empty() ? nullptr
                                            : std::make_unique<RE2>(re2::StringPiece(rule.unless.data(), rule.unless.size()),
                                                                    rule_options()));
    }
    if (!set_.Compile()) std::abort();
  }

  // The ids of the rules matching one line of code, in table order.
  std::vector<std::string_view> match(std::string_view code) const {
    std::vector<int> hits;
    std::vector<std::string_view> ids;
    if (!set_.Match(re2::StringPiece(code.data(), code.size()), &hits)) return ids;
    std::set<int> ordered(hits.begin(), hits.end());
    for (int i : ordered) {
      const auto& unless = unless_[static_cast<size_t>(i)];
      if (unless && RE2::PartialMatch(re2::StringPiece(code.data(), code.size()), *unless)) continue;
      ids.push_back(rules_[static_cast<size_t>(i)].id);
    }
    return ids;
  }

 private:
  std::span<const Rule> rules_;
  RE2::Set set_;
  std::vector<std::unique_ptr<RE2>> unless_;
};

// Compiled on first use and immutable afterwards; RE2 matching is thread-safe.
const RuleSet* rules_for(SourceLanguage language) {
  static const RuleSet python(kPythonRules), c(kCRules), shell(kShellRules);
  switch (language) {
    case SourceLanguage::python: return &python;
    case SourceLanguage::c_family: return &c;
    case SourceLanguage::shell: return &shell;
    case SourceLanguage::other: break;
  }
  return nullptr;
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

// Lexes `lines` in order and matches those `report` names (all of them when it is null).
std::vector<DangerFinding> scan_lines(std::string_view path, const std::vector<NumberedLine>& lines,
                                      const std::set<uint64_t>* report) {
  std::vector<DangerFinding> findings;
  SourceLanguage language = source_language(path);
  const RuleSet* rules = rules_for(language);
  if (!rules) return findings;
  CodeStripper stripper(language);
  for (const NumberedLine& line : lines) {
    std::string code = stripper.strip(line.text);
    if (report && !report->contains(line.number)) continue;
    for (std::string_view id : rules->match(code)) {
      findings.push_back(DangerFinding{std::string(path), line.number, std::string(id), excerpt_of(line.text)});
    }
  }
  return findings;
}

std::string_view hunk_line_text(const std::string& line) {
  std::string_view text = std::string_view(line).substr(1);
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  return text;
}

}  // namespace

std::vector<DangerFinding> scan_source(std::string_view path, std::string_view text) {
  return scan_lines(path, numbered(text), nullptr);
}

std::vector<DangerFinding> scan_added_lines(const FileChange& file, const std::optional<std::string>& post_image) {
  if (file.op == FileOp::remove) return {};
  if (file.after_content) return scan_source(file.path, *file.after_content);
  std::vector<NumberedLine> added;
  for (const Hunk& hunk : file.hunks) {
    uint64_t n = hunk.new_start;
    for (const std::string& line : hunk.lines) {
      if (line.empty() || line[0] == '-') continue;
      if (line[0] == '+') added.push_back({n, hunk_line_text(line)});
      ++n;
    }
  }
  if (!post_image) return scan_lines(file.path, added, nullptr);
  std::set<uint64_t> report;
  for (const NumberedLine& line : added) report.insert(line.number);
  return scan_lines(file.path, numbered(*post_image), &report);
}

std::string describe(const DangerFinding& finding) {
  return finding.path + ":" + std::to_string(finding.line) + " " + finding.rule + " `" + finding.excerpt + "`";
}

}  // namespace warden::kernel
