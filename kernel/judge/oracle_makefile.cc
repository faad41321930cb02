// The test section of a Makefile. A GNU make reader that knows what the section needs:
// logical lines (backslash continuations), comments, variable assignments (= := ::= ?= +=
// != and define ... endef, with export/override), rules (explicit, pattern, double-colon,
// target-specific variables, `; recipe`), recipe lines, and conditionals inside a recipe.
//
// Which rules are the tests': every rule whose target is test-named (test_named()), and,
// walking their prerequisites, every rule only tests reach. A rule the rest of the build
// also reaches (from a goal that is not test-named) is the code under test, not the oracle:
// adding a source to the library the test links is a change the tests judge. The variables
// the chosen lines reference are part of the section, transitively: changing CFLAGS to
// -DNDEBUG changes what the test binary checks.
#include <cctype>
#include <set>

#include "common/strings.h"
#include "kernel/judge/oracle_sections.h"

namespace warden::kernel {
namespace {


std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::string w;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!w.empty()) out.push_back(std::move(w));
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
  return out;
}

struct MakeRule {
  std::vector<std::string> prerequisites;  // the texts after ':' as written, one per rule line
  std::vector<std::string> recipe;
  std::vector<std::string> variables;  // target-specific assignments
};

struct Makefile {
  std::map<std::string, MakeRule> rules;                   // by target as written (patterns too)
  std::map<std::string, std::vector<std::string>> variables;  // name -> every assignment, in order
  std::map<std::string, std::set<std::string>> specials;   // .PHONY and friends -> their targets
  std::vector<std::string> patterns;                       // the targets of pattern rules
  std::vector<std::string> includes;  // include / -include / sinclude lines: other makefiles can define test rules
  std::string default_goal;
};

// Logical lines: a line ending in an odd number of backslashes continues on the next.
std::vector<std::string> logical_lines(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  bool continuing = false;
  for (std::string_view line : split(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t slashes = 0;
    while (slashes < line.size() && line[line.size() - 1 - slashes] == '\\') ++slashes;
    std::string_view body = slashes % 2 == 1 ? line.substr(0, line.size() - 1) : line;
    if (continuing) {
      current += " " + std::string(trim(body));
    } else {
      current = std::string(body);
    }
    continuing = slashes % 2 == 1;
    if (!continuing) out.push_back(std::move(current));
  }
  if (continuing) out.push_back(std::move(current));
  return out;
}

std::string strip_comment(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '#') {
      out += '#';
      ++i;
    } else if (line[i] == '#') {
      break;
    } else {
      out += line[i];
    }
  }
  return out;
}

// The assignment's variable name when `line` is one ("A := b", "A+=b", "A = x:y"), else empty.
std::string assigned_name(std::string_view line) {
  size_t eq = line.find('=');
  if (eq == std::string_view::npos) return {};
  size_t colon = line.find(':');
  if (colon != std::string_view::npos && colon < eq) {
    for (size_t k = colon; k < eq; ++k) {
      if (line[k] != ':') return {};  // a ':' before the operator: a rule (maybe with a target variable)
    }
  }
  size_t end = eq;
  while (end > 0 && (line[end - 1] == ':' || line[end - 1] == '+' || line[end - 1] == '?' || line[end - 1] == '!')) --end;
  std::vector<std::string> name = words(line.substr(0, end));
  while (!name.empty() && (name.front() == "export" || name.front() == "override" || name.front() == "private")) {
    name.erase(name.begin());
  }
  return name.size() == 1 ? name.front() : std::string();
}

bool conditional(std::string_view line) {
  std::vector<std::string> w = words(line);
  if (w.empty()) return false;
  return w[0] == "ifeq" || w[0] == "ifneq" || w[0] == "ifdef" || w[0] == "ifndef" || w[0] == "else" || w[0] == "endif";
}

Makefile read_makefile(std::string_view text) {
  Makefile mk;
  std::vector<std::string> lines = logical_lines(text);
  std::vector<std::string> current;  // the targets whose recipe is being read
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& raw = lines[i];
    if (!raw.empty() && raw.front() == '\t' && !current.empty()) {
      for (const std::string& t : current) mk.rules[t].recipe.push_back(collapse_whitespace(raw));
      continue;
    }
    std::string line = strip_comment(raw);
    std::string_view t = trim(line);
    if (t.empty()) continue;
    if (conditional(t)) {
      for (const std::string& target : current) mk.rules[target].recipe.push_back(collapse_whitespace(t));
      continue;
    }
    current.clear();
    std::vector<std::string> w = words(t);
    if (w[0] == "define" || (w.size() > 1 && (w[0] == "export" || w[0] == "override") && w[1] == "define")) {
      std::string name = w[0] == "define" ? (w.size() > 1 ? w[1] : "") : (w.size() > 2 ? w[2] : "");
      std::string body;
      while (++i < lines.size() && trim(lines[i]) != "endef") body += collapse_whitespace(lines[i]) + "\n";
      mk.variables[name].push_back(collapse_whitespace(t) + "\n" + body);
      continue;
    }
    if (std::string name = assigned_name(t); !name.empty()) {
      mk.variables[name].push_back(collapse_whitespace(t));
      continue;
    }
    if (w[0] == "include" || w[0] == "-include" || w[0] == "sinclude") {
      mk.includes.push_back(collapse_whitespace(t));
      continue;
    }
    size_t colon = t.find(':');
    if (colon == std::string_view::npos) continue;  // vpath, $(eval ...): not a rule
    std::string_view rest = t.substr(colon + 1);
    if (rest.starts_with(':')) rest.remove_prefix(1);
    std::string recipe;
    if (size_t semi = rest.find(';'); semi != std::string_view::npos) {
      recipe = collapse_whitespace(rest.substr(semi + 1));
      rest = rest.substr(0, semi);
    }
    for (const std::string& target : words(t.substr(0, colon))) {
      if (target.starts_with('.') && target.find('%') == std::string::npos && target.find('/') == std::string::npos) {
        for (const std::string& p : words(rest)) mk.specials[target].insert(p);
        continue;
      }
      MakeRule& rule = mk.rules[target];
      if (rest.find('=') != std::string_view::npos) {
        rule.variables.push_back(collapse_whitespace(rest));
        continue;
      }
      rule.prerequisites.push_back(collapse_whitespace(rest));
      if (!recipe.empty()) rule.recipe.push_back(recipe);
      current.push_back(target);
      if (mk.default_goal.empty() && target.find('%') == std::string::npos) mk.default_goal = target;
    }
  }
  for (const auto& [target, rule] : mk.rules) {
    if (target.find('%') != std::string::npos) mk.patterns.push_back(target);
  }
  return mk;
}

// The names of the variables `text` references: $(NAME...), ${NAME...} and $X. Function names
// ($(wildcard ...)) come out too; they name no variable, which is harmless.
std::set<std::string> references(std::string_view text) {
  std::set<std::string> out;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] != '$') continue;
    char next = text[i + 1];
    if (next == '$') {
      ++i;
    } else if (next == '(' || next == '{') {
      size_t k = i + 2;
      std::string name;
      while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_' || text[k] == '.' || text[k] == '-')) {
        name += text[k++];
      }
      if (!name.empty()) out.insert(name);
    } else if (std::isalnum(static_cast<unsigned char>(next)) || next == '_') {
      out.insert(std::string(1, next));
    }
  }
  return out;
}

// `text` with the variables it references replaced by their values (every assignment's
// value, joined), so prerequisites written as $(TESTS) can be followed. Bounded in depth and
// in size: a Makefile whose variables double at each level cannot make decide() slow.
constexpr size_t kMaxExpansion = 64 * 1024;

void expand_into(const Makefile& mk, std::string_view text, int depth, std::string& out) {
  for (size_t i = 0; i < text.size() && out.size() < kMaxExpansion; ++i) {
    if (depth < 8 && text[i] == '$' && i + 1 < text.size() && (text[i + 1] == '(' || text[i + 1] == '{')) {
      char close = text[i + 1] == '(' ? ')' : '}';
      size_t end = text.find(close, i + 2);
      if (end != std::string_view::npos) {
        if (auto var = mk.variables.find(std::string(text.substr(i + 2, end - i - 2))); var != mk.variables.end()) {
          for (const std::string& assignment : var->second) {
            size_t eq = assignment.find('=');
            out += ' ';
            if (eq != std::string::npos) expand_into(mk, std::string_view(assignment).substr(eq + 1), depth + 1, out);
          }
          i = end;
          continue;
        }
      }
    }
    out += text[i];
  }
}

std::string expand(const Makefile& mk, std::string_view text) {
  std::string out;
  expand_into(mk, text, 0, out);
  return out;
}

bool pattern_matches(std::string_view pattern, std::string_view target) {
  size_t pct = pattern.find('%');
  if (pct == std::string_view::npos) return false;
  std::string_view prefix = pattern.substr(0, pct), suffix = pattern.substr(pct + 1);
  return target.size() > prefix.size() + suffix.size() && target.starts_with(prefix) && target.ends_with(suffix);
}

// The rules `target`'s prerequisites name: explicit rules first, pattern rules otherwise.
std::vector<std::string> prerequisite_rules(const Makefile& mk, const std::string& target) {
  std::vector<std::string> out;
  auto rule = mk.rules.find(target);
  if (rule == mk.rules.end()) return out;
  for (const std::string& text : rule->second.prerequisites) {
    for (const std::string& word : words(expand(mk, text))) {
      if (word == "|") continue;
      if (mk.rules.contains(word) && word.find('%') == std::string::npos) {
        out.push_back(word);
        continue;
      }
      for (const std::string& pattern : mk.patterns) {
        if (pattern_matches(pattern, word)) out.push_back(pattern);
      }
    }
  }
  return out;
}

// Every rule reachable from `roots`, entering a prerequisite only when `enter` says so.
template <typename Enter>
std::set<std::string> closure(const Makefile& mk, const std::vector<std::string>& roots, Enter enter) {
  std::set<std::string> seen;
  std::vector<std::string> queue = roots;
  while (!queue.empty()) {
    std::string target = queue.back();
    queue.pop_back();
    if (!seen.insert(target).second) continue;
    for (const std::string& p : prerequisite_rules(mk, target)) {
      if (!seen.contains(p) && enter(p)) queue.push_back(p);
    }
  }
  return seen;
}

}  // namespace

TestSection makefile_test_section(std::string_view text) {
  const Makefile mk = read_makefile(text);

  std::set<std::string> prerequisites_of_some_rule;
  for (const auto& [target, rule] : mk.rules) {
    for (const std::string& p : prerequisite_rules(mk, target)) prerequisites_of_some_rule.insert(p);
  }
  std::vector<std::string> shared_roots, test_roots;
  for (const auto& [target, rule] : mk.rules) {
    if (target.find('%') != std::string::npos) continue;
    if (test_named(target)) {
      test_roots.push_back(target);
    } else if (!prerequisites_of_some_rule.contains(target) || target == mk.default_goal) {
      shared_roots.push_back(target);
    }
  }
  const std::set<std::string> shared = closure(mk, shared_roots, [](const std::string& t) { return !test_named(t); });
  const std::set<std::string> oracle =
      closure(mk, test_roots, [&](const std::string& t) { return test_named(t) || !shared.contains(t); });

  TestSection out;
  std::set<std::string> referenced;
  auto note = [&](const std::string& key, const std::vector<std::string>& lines) {
    std::string joined;
    for (const std::string& l : lines) {
      joined += (joined.empty() ? "" : "\n") + l;
      referenced.merge(references(l));
    }
    out[key] = joined;
  };
  // What another makefile defines is out of sight here, and can be any test rule at all: the
  // include lines themselves are part of the oracle.
  if (!mk.includes.empty()) note("the list of included makefiles", mk.includes);
  for (const std::string& target : oracle) {
    const MakeRule& rule = mk.rules.at(target);
    note("the prerequisites of target " + target, rule.prerequisites);
    note("the recipe of target " + target, rule.recipe);
    if (!rule.variables.empty()) note("the variables of target " + target, rule.variables);
    for (const auto& [special, targets] : mk.specials) {
      if (targets.contains(target)) out["target " + target + " in " + special] = "yes";
    }
  }
  std::vector<std::string> queue(referenced.begin(), referenced.end());
  std::set<std::string> done;
  while (!queue.empty()) {
    std::string name = queue.back();
    queue.pop_back();
    if (!done.insert(name).second) continue;
    auto var = mk.variables.find(name);
    std::string joined;
    if (var != mk.variables.end()) {
      for (const std::string& assignment : var->second) {
        joined += (joined.empty() ? "" : "\n") + assignment;
        for (const std::string& r : references(assignment)) queue.push_back(r);
      }
    }
    out["the variable " + name] = joined;
  }
  return out;
}

}  // namespace warden::kernel
