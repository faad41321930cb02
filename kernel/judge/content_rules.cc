#include "kernel/judge/content_rules.h"

#include <algorithm>
#include <array>

#include "kernel/judge/source_text.h"

namespace warden::kernel {
namespace {

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && space(s[i])) ++i;
  return i;
}

size_t ident_end(std::string_view s, size_t i) {
  while (i < s.size() && ident_char(s[i])) ++i;
  return i;
}

// `def name(` / `async def name(` after the indentation.
void python_definitions(std::string_view text, std::set<std::string>& out) {
  CodeStripper stripper(SourceLanguage::python);
  for (std::string_view raw : split_lines(text)) {
    std::string code = stripper.strip(raw);
    std::string_view s = code;
    size_t i = skip_space(s, 0);
    if (s.substr(i, 5) == "async" && i + 5 < s.size() && space(s[i + 5])) i = skip_space(s, i + 5);
    if (s.substr(i, 3) != "def" || i + 3 >= s.size() || !space(s[i + 3])) continue;
    size_t name = skip_space(s, i + 3);
    size_t end = ident_end(s, name);
    if (end == name || !ident_start(s[name])) continue;
    if (size_t paren = skip_space(s, end); paren < s.size() && s[paren] == '(') out.emplace(s.substr(name, end - name));
  }
}

// Words that are followed by '(' without naming a function being defined, or that make the
// name after them a call rather than a definition.
bool is_keyword(std::string_view word) {
  static constexpr std::array<std::string_view, 22> kKeywords = {
      "if",      "while",    "for",      "switch",        "catch",    "return", "sizeof",  "alignof",
      "decltype", "typeof",  "__attribute__", "defined", "do",       "else",   "case",    "static_assert",
      "noexcept", "requires", "alignas", "new",           "delete",   "throw"};
  return std::find(kKeywords.begin(), kKeywords.end(), word) != kKeywords.end();
}

// gtest's TEST(Suite, Name) { ... }: the test is Name (also spelled Suite.Name).
void gtest_names(std::string_view args, std::set<std::string>& out) {
  size_t comma = args.find(',');
  if (comma == std::string_view::npos) return;
  auto trim = [](std::string_view s) {
    size_t b = skip_space(s, 0);
    size_t e = s.size();
    while (e > b && space(s[e - 1])) --e;
    return s.substr(b, e - b);
  };
  std::string_view suite = trim(args.substr(0, comma)), name = trim(args.substr(comma + 1));
  if (suite.empty() || name.empty()) return;
  out.emplace(name);
  out.emplace(std::string(suite) + "." + std::string(name));
}

void c_definitions(std::string_view text, std::set<std::string>& out) {
  CodeStripper stripper(SourceLanguage::c_family);
  std::string code;
  for (std::string_view raw : split_lines(text)) {
    code += stripper.strip(raw);
    code += '\n';
  }
  // Matching parentheses and, for every position, the next '{', ';' or '}': one pass each,
  // so the whole file is linear however its calls nest.
  constexpr size_t npos = std::string::npos;
  std::vector<size_t> close(code.size(), npos), next_stop(code.size() + 1, npos);
  std::vector<size_t> open;
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '(') open.push_back(i);
    if (code[i] == ')' && !open.empty()) {
      close[open.back()] = i;
      open.pop_back();
    }
  }
  for (size_t i = code.size(); i-- > 0;) {
    next_stop[i] = (code[i] == '{' || code[i] == ';' || code[i] == '}') ? i : next_stop[i + 1];
  }

  std::string_view s = code;
  std::string_view previous_word;  // the identifier before the current one, when nothing else is between
  char previous = 0;               // the last non-space character before the current identifier
  size_t i = 0;
  while (i < s.size()) {
    if (space(s[i])) {
      ++i;
      continue;
    }
    if (!ident_start(s[i])) {
      previous = s[i];
      previous_word = {};
      ++i;
      continue;
    }
    size_t start = i;
    size_t end = ident_end(s, i);
    size_t last = start;  // the last component of a qualified name A::B::name
    while (s.substr(end, 2) == "::" && end + 2 < s.size() && ident_start(s[end + 2])) {
      last = end + 2;
      end = ident_end(s, last);
    }
    std::string_view name = s.substr(start, end - start), word = s.substr(last, end - last);
    size_t paren = skip_space(s, end);
    bool declarator_position = previous == 0 || std::string_view(";{}*&>~").find(previous) != npos;
    if (!previous_word.empty()) declarator_position = !is_keyword(previous_word);
    if (paren < s.size() && s[paren] == '(' && close[paren] != npos && declarator_position && !is_keyword(word)) {
      size_t stop = next_stop[close[paren]];
      if (stop != npos && s[stop] == '{') {
        out.emplace(word);
        out.emplace(name);
        if (word == "TEST" || word == "TEST_F" || word == "TEST_P") {
          gtest_names(s.substr(paren + 1, close[paren] - paren - 1), out);
        }
      }
    }
    previous_word = word;
    previous = s[end - 1];
    i = end;
  }
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// 1-based number of the first line where `a` and `b` differ.
size_t first_difference_line(std::string_view a, std::string_view b) {
  size_t n = std::mismatch(a.begin(), a.begin() + static_cast<ptrdiff_t>(std::min(a.size(), b.size())), b.begin()).first -
             a.begin();
  return static_cast<size_t>(std::count(a.begin(), a.begin() + static_cast<ptrdiff_t>(n), '\n')) + 1;
}

bool creates(StepAction action) {
  return action == StepAction::create_module || action == StepAction::create_function ||
         action == StepAction::create_test;
}

}  // namespace

std::optional<std::set<std::string>> defined_functions(std::string_view path, std::string_view text) {
  std::set<std::string> out;
  switch (source_language(path)) {
    case SourceLanguage::python: python_definitions(text, out); return out;
    case SourceLanguage::c_family: c_definitions(text, out); return out;
    case SourceLanguage::shell:
    case SourceLanguage::go:
    case SourceLanguage::javascript:
    case SourceLanguage::other: break;
  }
  return std::nullopt;
}

std::vector<std::string> content_mismatches(const ContentCheck& check) {
  const BuildStep& step = check.step;
  std::string action(step_action_name(step.action));
  std::vector<std::string> problems;
  auto is_target = [&](const std::string& path) {
    return std::find(step.targets.begin(), step.targets.end(), path) != step.targets.end();
  };

  std::set<std::string> written;
  for (const FileChange& f : check.diff.files) {
    for (const std::string* p : {&f.path, f.old_path ? &*f.old_path : nullptr}) {
      if (p && !is_target(*p)) {
        problems.push_back(*p + " is not a target of step " + step.id + " (targets: " + join(step.targets) + ")");
      }
    }
    if (f.op != FileOp::remove) written.insert(f.path);
    if (!creates(step.action)) continue;
    if (f.op != FileOp::add) {
      problems.push_back(f.path + ": a " + action + " step creates new files; the diff does " +
                         std::string(file_op_name(f.op)));
    } else if (auto b = check.base.find(f.path); b != check.base.end() && b->second.content) {
      problems.push_back(f.path + ": a " + action + " step creates new files; this one exists in the base");
    }
  }
  if (creates(step.action)) {
    for (const std::string& target : step.targets) {
      if (!written.contains(target)) problems.push_back(target + ": the " + action + " step's target is not created");
    }
  }
  if (step.action == StepAction::add_dependency &&
      (step.targets.size() != 1 || check.diff.files.size() != 1 || check.diff.files[0].path != step.targets[0] ||
       check.diff.files[0].old_path)) {
    problems.push_back("an add_dependency step touches exactly one file, its target (the manifest: " +
                       join(step.targets) + "); the diff touches " + std::to_string(check.diff.files.size()));
  }
  if (!check.post_images) return problems;

  if ((step.action == StepAction::create_function || step.action == StepAction::create_test) && !step.symbols.empty()) {
    std::set<std::string> defined;
    for (const auto& [path, content] : *check.post_images) {
      if (!content) continue;
      if (auto names = defined_functions(path, *content)) defined.insert(names->begin(), names->end());
    }
    for (const std::string& symbol : step.symbols) {
      if (!defined.contains(symbol)) {
        problems.push_back("function " + symbol + " is not defined by the diff's files (a " + action +
                           " step must define it)");
      }
    }
  }
  if (check.exact_content && step.content) {
    for (const auto& [path, want] : *step.content) {
      auto post = check.post_images->find(path);
      if (post == check.post_images->end() || !post->second) {
        problems.push_back(path + ": the step's exact content is not proposed");
      } else if (*post->second != want) {
        problems.push_back(path + ": differs from the step's exact content at line " +
                           std::to_string(first_difference_line(*post->second, want)));
      }
    }
  }
  return problems;
}

}  // namespace warden::kernel
