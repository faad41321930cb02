// The test section of a CMake file: its commands read with CMake's own lexical rules
// (comments, bracket comments and arguments, quoted arguments, nested parentheses), then the
// commands that register, configure or build what the tests run.
#include <algorithm>
#include <cctype>
#include <set>

#include "kernel/judge/oracle_sections.h"

namespace warden::kernel {
namespace {

struct CMakeCommand {
  std::string name;  // lower case: CMake's command names are case-insensitive
  std::vector<std::string> args;
};

class CMakeLexer {
 public:
  explicit CMakeLexer(std::string_view text) : text_(text) {}

  // Every command; the text after a command that does not close is `tail`.
  std::vector<CMakeCommand> commands(std::string& tail) {
    std::vector<CMakeCommand> out;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '#') {
        skip_comment();
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t start = pos_;
        CMakeCommand cmd;
        while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
          cmd.name += static_cast<char>(std::tolower(static_cast<unsigned char>(text_[pos_++])));
        }
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
        if (pos_ >= text_.size() || text_[pos_] != '(') continue;  // not a command: stray text
        ++pos_;
        if (!arguments(cmd.args)) {
          tail = std::string(text_.substr(start));
          return out;
        }
        out.push_back(std::move(cmd));
      } else {
        ++pos_;
      }
    }
    return out;
  }

 private:
  // "[" "="* "[" at pos_: the number of '='; npos when it is not a bracket opening.
  size_t bracket_level(size_t at) const {
    if (at >= text_.size() || text_[at] != '[') return std::string_view::npos;
    size_t k = at + 1;
    while (k < text_.size() && text_[k] == '=') ++k;
    return k < text_.size() && text_[k] == '[' ? k - at - 1 : std::string_view::npos;
  }

  // A bracket argument or comment body starting at pos_ (on its '['); its content.
  std::string bracket(size_t level) {
    std::string close = "]" + std::string(level, '=') + "]";
    size_t start = pos_ + level + 2;
    size_t end = text_.find(close, start);
    if (end == std::string_view::npos) {
      pos_ = text_.size();
      return std::string(text_.substr(start));
    }
    pos_ = end + close.size();
    return std::string(text_.substr(start, end - start));
  }

  void skip_comment() {
    ++pos_;  // '#'
    if (size_t level = bracket_level(pos_); level != std::string_view::npos) {
      bracket(level);
      return;
    }
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
  }

  // After '(' up to its ')'; false when the text ends first.
  bool arguments(std::vector<std::string>& args) {
    int depth = 1;
    std::string token;
    bool in_token = false;
    auto flush = [&] {
      if (in_token) args.push_back(std::move(token));
      token.clear();
      in_token = false;
    };
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        flush();
        ++pos_;
      } else if (c == '#') {
        flush();
        skip_comment();
      } else if (c == '"') {
        ++pos_;
        in_token = true;
        token += '"';
        while (pos_ < text_.size() && text_[pos_] != '"') {
          if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) token += text_[pos_++];
          token += text_[pos_++];
        }
        if (pos_ >= text_.size()) return false;
        token += '"';
        ++pos_;
      } else if (size_t level = bracket_level(pos_); level != std::string_view::npos && !in_token) {
        args.push_back("[[" + bracket(level) + "]]");
      } else if (c == '(') {
        flush();
        args.emplace_back("(");
        ++depth;
        ++pos_;
      } else if (c == ')') {
        flush();
        ++pos_;
        if (--depth == 0) return true;
        args.emplace_back(")");
      } else {
        if (c == '\\' && pos_ + 1 < text_.size()) token += text_[pos_++];
        token += text_[pos_++];
        in_token = true;
      }
    }
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string unquote(std::string_view arg) {
  if (arg.size() >= 2 && arg.front() == '"' && arg.back() == '"') arg = arg.substr(1, arg.size() - 2);
  return std::string(arg);
}

// "$<TARGET_FILE:x>" -> x; anything else as it is.
std::string target_of(std::string_view arg) {
  std::string a = unquote(arg);
  constexpr std::string_view kGenex = "$<TARGET_FILE:";
  if (a.starts_with(kGenex) && a.ends_with('>')) return a.substr(kGenex.size(), a.size() - kGenex.size() - 1);
  return a;
}

std::string arg_or_empty(const CMakeCommand& c, size_t i) { return i < c.args.size() ? unquote(c.args[i]) : ""; }

// The test's name and the program it runs, for add_test in both signatures.
std::pair<std::string, std::string> add_test_parts(const CMakeCommand& c) {
  if (arg_or_empty(c, 0) != "NAME") return {arg_or_empty(c, 0), c.args.size() > 1 ? target_of(c.args[1]) : ""};
  std::string name = arg_or_empty(c, 1), program;
  auto command = std::find(c.args.begin(), c.args.end(), "COMMAND");
  if (command != c.args.end() && command + 1 != c.args.end()) program = target_of(*(command + 1));
  return {name, program};
}

bool discovers_tests(std::string_view name) {
  return name == "gtest_discover_tests" || name == "gtest_add_tests" || name == "catch_discover_tests" ||
         name == "doctest_discover_tests";
}

bool test_module(std::string_view module) {
  return module == "CTest" || module == "CTestUseLaunchers" || module == "GoogleTest" || module == "Catch" ||
         module == "ParseAndAddCatchTests" || module == "doctest" || module == "Dart";
}

// Commands whose first argument is a target: what it is built from and how.
bool about_a_target(std::string_view name) {
  return name == "add_executable" || name == "add_library" || name == "add_dependencies" || name == "set_target_properties" ||
         name.starts_with("target_");
}

}  // namespace

TestSection cmake_test_section(std::string_view text) {
  TestSection out;
  std::string tail;
  std::vector<CMakeCommand> commands = CMakeLexer(text).commands(tail);
  if (!tail.empty()) out["the unclosed command at the end"] = collapse_whitespace(tail);

  std::set<std::string> programs;  // targets some test runs
  for (const CMakeCommand& c : commands) {
    if (c.name == "add_test") programs.insert(add_test_parts(c).second);
    if (discovers_tests(c.name)) programs.insert(arg_or_empty(c, 0) == "TARGET" ? arg_or_empty(c, 1) : arg_or_empty(c, 0));
  }
  std::map<std::string, int> seen;
  for (const CMakeCommand& c : commands) {
    const std::string first = arg_or_empty(c, 0);
    std::string label = first;
    bool chosen = false;
    if (c.name == "enable_testing" || c.name == "add_test" || c.name == "set_tests_properties" || discovers_tests(c.name)) {
      chosen = true;
      if (c.name == "add_test") label = add_test_parts(c).first;
    } else if (c.name == "include") {
      chosen = test_module(first);
    } else if (c.name == "set_property") {
      chosen = first == "TEST";
    } else if (c.name == "set" || c.name == "option" || c.name == "cmake_dependent_option" || c.name == "unset") {
      chosen = first == "BUILD_TESTING";
    } else if (c.name == "add_custom_target") {
      chosen = test_named(first);
    } else if (about_a_target(c.name)) {
      chosen = programs.contains(first) || test_named(first);
    }
    if (!chosen) continue;
    std::string key = c.name + "(" + label + ")";
    if (int n = ++seen[key]; n > 1) key += " #" + std::to_string(n);
    std::string value;
    for (const std::string& a : c.args) value += (value.empty() ? "" : " ") + a;
    out[key] = value;
  }
  return out;
}

}  // namespace warden::kernel
