// Which reader reads which build file, and how two sections compare. The readers themselves
// are in oracle_config_files.cc (pyproject.toml, setup.cfg/tox.ini, package.json),
// oracle_cmake.cc and oracle_makefile.cc.
#include "kernel/judge/oracle_sections.h"

#include <cctype>

namespace warden::kernel {

std::optional<SectionKind> section_kind(std::string_view path) {
  std::string_view name = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  if (name == "pyproject.toml") return SectionKind::pyproject;
  if (name == "setup.cfg" || name == "tox.ini") return SectionKind::ini;
  if (name == "CMakeLists.txt" || name.ends_with(".cmake")) return SectionKind::cmake;
  if (name == "Makefile" || name == "makefile" || name == "GNUmakefile" || name.ends_with(".mk")) return SectionKind::makefile;
  if (name == "package.json") return SectionKind::package_json;
  return std::nullopt;
}

TestSection extract_test_section(SectionKind kind, std::string_view text) {
  switch (kind) {
    case SectionKind::pyproject: return pyproject_test_section(text);
    case SectionKind::ini: return ini_test_section(text);
    case SectionKind::cmake: return cmake_test_section(text);
    case SectionKind::makefile: return makefile_test_section(text);
    case SectionKind::package_json: return package_json_test_section(text);
  }
  return {};
}

std::vector<std::string> section_changes(const TestSection& before, const TestSection& after) {
  std::vector<std::string> out;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      out.push_back(b->first + " was removed");
      ++b;
    } else if (b == before.end() || a->first < b->first) {
      out.push_back(a->first + " was added");
      ++a;
    } else {
      if (b->second != a->second) out.push_back(b->first + " changed");
      ++a;
      ++b;
    }
  }
  return out;
}

bool test_named(std::string_view name) {
  std::string word;
  auto judge = [&] {
    bool yes = word.starts_with("test") || word == "check" || word == "ctest" || word == "unittest" || word == "unittests" ||
               word == "selftest" || word == "runtests";
    word.clear();
    return yes;
  };
  for (char c : name) {
    if (c == '/' || c == '.' || c == '_' || c == '-' || c == ':') {
      if (judge()) return true;
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return judge();
}

std::string collapse_whitespace(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space) out += ' ';
      out += c;
      space = false;
    }
  }
  return out;
}

}  // namespace warden::kernel
